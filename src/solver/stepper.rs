//! The one solver loop, and the stepper that runs the Frank–Wolfe family in it.
//!
//! [`run`] owns what every algorithm shares (argmin's executor): the clock, the iteration
//! cap and time limit, Ctrl-C, the stall rule's verdict, the observers (each iteration, then
//! once at the end), the working-set rounds' yield check and the exact certification. A
//! [`Stepper`] owns one algorithm's iterate and says, at the top of each iteration, where it
//! stands ([`Opened`]) and, when the loop goes on, takes one step. The FW variants run as
//! [`FwStepper`] (one [`super::Variant`] on the simplex); SimpleSVM as
//! [`super::simple_svm::SimpleSvm`].

use super::{
    Observer, Progress, Simplex, SolveResult, SolverParams, State, Step, StepKind, StopReason,
    VariantOn, YieldCheck, init, meb_kappa,
};
use crate::active::ActiveSet;
use crate::backend::{Reduction, Upcast};
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::stop::{StopRule, stop_rule_met};
use std::time::Instant;

/// Where an iterate stands, as a stepper reports it when an iteration opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Opened {
    /// The objective the solver tracks.
    pub f: f64,
    /// The optimality measure the stop rule tests (the duality gap, or SimpleSVM's largest
    /// KKT violation).
    pub gap: f64,
    /// Size of the active set (or SimpleSVM's free set).
    pub active: usize,
    /// The stop rule holds here.
    pub converged: bool,
    /// No progress for so long that floating point cannot do better.
    pub stalled: bool,
}

/// One algorithm's iteration logic on the backend object type `B` (`dyn Solvable`, or
/// `dyn Marks` for an algorithm that needs marked reductions), driven by [`run`].
pub trait Stepper<B: ?Sized + Upcast> {
    /// Opens iteration `iter` (the number of steps taken so far): where the iterate stands.
    fn open(&mut self, iter: u64, be: &mut B) -> Result<Opened>;

    /// One step from the iterate the last [`open`](Stepper::open) saw (None: a step with no
    /// [`Step`] kind to report).
    fn step(&mut self, be: &mut B) -> Result<Option<Step>>;

    /// Runs the working-set rounds' check on the opened iterate (true: hand back). Steppers
    /// without a simplex iterate never yield.
    fn check_yield(&mut self, _check: &mut YieldCheck<'_>, _be: &mut B) -> Result<bool> {
        Ok(false)
    }

    /// The exact objective and optimality measure of the iterate (f64, from scratch).
    fn certify(&self, prob: &Problem<'_>, be: &mut B) -> Result<(f64, f64)>;

    /// The final α, and LIBSVM's rho when the solver has a bias of its own.
    fn finish(self) -> (ActiveSet, Option<f64>);
}

/// Runs the stepper `start` builds (on the clock: its set-up counts as solve time) until a
/// stop rule holds, then certifies when `params.certify` asks.
pub fn run<B: ?Sized + Upcast, S: Stepper<B>>(
    prob: &Problem<'_>,
    be: &mut B,
    params: &SolverParams,
    observers: &mut [&mut dyn Observer],
    mut yield_check: Option<YieldCheck<'_>>,
    start_stepper: impl FnOnce(&mut B) -> Result<S>,
) -> Result<SolveResult> {
    let start = Instant::now();
    let mut stepper = start_stepper(be)?;
    let mut iter = 0u64;
    let mut checked = 0u64;
    let mut last_step: Option<Step> = None;
    let (stop, at) = loop {
        let at = stepper.open(iter, be)?;
        // A pass cut by the budget (the starting gradient, a step's) leaves numbers of no
        // use: the run ends at the iterate it has, its f and gap unknown.
        if crate::budget::current().cut() {
            let unknown = Opened {
                f: f64::NAN,
                gap: f64::NAN,
                ..at
            };
            break (super::rounds::cut_stop(StopReason::TimeLimit), unknown);
        }
        if !at.gap.is_finite() {
            return Err(Error::Backend(format!(
                "non-finite duality gap at iteration {iter} (f = {})",
                at.f
            )));
        }
        let elapsed = start.elapsed();
        let p = Progress {
            iter,
            seconds: elapsed.as_secs_f64(),
            f: at.f,
            gap: at.gap,
            step: last_step,
            active: at.active,
        };
        for o in observers.iter_mut() {
            o.observe(&p);
        }
        if at.converged {
            break (StopReason::Converged, at);
        }
        if iter >= params.max_iter {
            break (StopReason::MaxIter, at);
        }
        if params.time_limit.is_some_and(|t| elapsed >= t) {
            break (StopReason::TimeLimit, at);
        }
        if crate::interrupt::requested() {
            break (StopReason::Interrupted, at);
        }
        // The deadline of a training this solve is part of (the time limit counted from the
        // training's start: a warm start's subsample, a class pair).
        if crate::budget::spent() {
            break (StopReason::TimeLimit, at);
        }
        // At every multiple of `every` (the first iteration past it, where a device batch
        // jumped over it).
        if let Some(y) = yield_check.as_mut()
            && iter > 0
            && y.every > 0
            && iter / y.every > checked / y.every
        {
            checked = iter;
            if stepper.check_yield(y, be)? {
                break (StopReason::Yielded, at);
            }
        }
        if at.stalled {
            break (StopReason::Stalled, at);
        }
        last_step = stepper.step(be)?;
        // A batch of the device's outer iterations counts as its iterations.
        iter += match last_step {
            Some(Step {
                kind: StepKind::DeviceBatch,
                size,
            }) => (size as u64).max(1),
            _ => 1,
        };
    };
    let seconds = start.elapsed().as_secs_f64();
    let (mut certified_f, mut certified_gap, mut certify_seconds) = (None, None, 0.0);
    let mut stop = stop;
    if params.certify {
        let t = Instant::now();
        // After a stop the certification has a short budget of its own; a pass the budget
        // cuts leaves the run uncertified.
        let grace = crate::budget::grace_after(params.time_limit);
        let pass = || {
            let fg = stepper.certify(prob, be);
            (fg, crate::budget::current().cut())
        };
        let (fg, cut) = if matches!(stop, StopReason::TimeLimit | StopReason::Interrupted) {
            crate::budget::grace(grace, pass)
        } else {
            crate::budget::extended(grace, pass)
        };
        let (f, g) = fg?;
        if cut {
            stop = super::rounds::cut_stop(stop);
        } else {
            certified_f = Some(f);
            certified_gap = Some(g);
        }
        certify_seconds = t.elapsed().as_secs_f64();
    }
    let (alpha, rho) = stepper.finish();
    let result = SolveResult {
        warm: None,
        iterations: iter,
        f: at.f,
        gap: at.gap,
        certified_f,
        certified_gap,
        stop,
        seconds,
        certify_seconds,
        stats: be.up().stats(),
        alpha,
        shrink: None,
        rho,
        gradient: None,
    };
    for o in observers.iter_mut() {
        o.finish(&result);
    }
    Ok(result)
}

/// Iterations without a new best objective or gap after which an FW run is declared stalled.
pub const STALL_ITERATIONS: u32 = 100_000;

/// One FW [`super::Variant`] on the simplex: the reduction that opens each iteration, the stop rule
/// (`-e`, `--rel-eps`, `--stop`), the stall count, and the variant's step.
pub struct FwStepper<B: ?Sized + Upcast> {
    variant: Box<dyn VariantOn<B>>,
    state: State,
    red: Reduction,
    stop: StopRule,
    eps: f64,
    rel_eps: f64,
    kappa: f64,
    best_f: f64,
    best_gap: f64,
    no_progress: u32,
}

impl<B: ?Sized + Simplex> FwStepper<B> {
    /// Prepares `params.algorithm()`'s variant on `be` and sets the starting α: `alpha0` (with
    /// its gradient when the caller has it) or the random initial sample.
    pub fn start(
        prob: &Problem<'_>,
        be: &mut B,
        params: &SolverParams,
        alpha0: Option<(ActiveSet, Option<Vec<f64>>)>,
    ) -> Result<Self> {
        if params.algorithm() == super::Algorithm::SimpleSvm {
            return Err(Error::param(format!(
                "{} does not run on the simplex: solve it with solver::solve",
                params.algorithm()
            )));
        }
        let mut variant = B::variant(params)?;
        variant.prepare(be);
        let be = be.up();
        let kappa = match params.stop {
            StopRule::Gap => 0.0,
            StopRule::Meb => meb_kappa(prob, be)?,
        };
        let alpha = match alpha0 {
            Some((a, Some(g))) => {
                be.set_alpha_with(&a, &g)?;
                a
            }
            Some((a, None)) => {
                be.set_alpha(&a)?;
                a
            }
            None => {
                let a = init::initial_alpha_on(be, params.init_size, params.seed, params.eps)?;
                be.set_alpha(&a)?;
                a
            }
        };
        Ok(FwStepper {
            variant,
            state: State {
                alpha,
                f: 0.0,
                iter: 0,
            },
            red: Reduction {
                s: 0,
                g_s: 0.0,
                v: usize::MAX,
                g_v: 0.0,
                alpha_g: 0.0,
                alpha_g_prev: 0.0,
            },
            stop: params.stop,
            eps: params.eps,
            rel_eps: params.rel_eps(),
            kappa,
            best_f: f64::INFINITY,
            best_gap: f64::INFINITY,
            no_progress: 0,
        })
    }
}

impl<B: ?Sized + Simplex> Stepper<B> for FwStepper<B> {
    fn open(&mut self, iter: u64, be: &mut B) -> Result<Opened> {
        self.state.iter = iter;
        let (red, gap, may_stop) = self.variant.open(&self.state, be)?;
        self.red = red;
        self.state.f = 0.5 * red.alpha_g;
        let f = self.state.f;
        let converged = may_stop
            && gap.is_finite()
            && stop_rule_met(
                self.stop,
                self.eps,
                self.rel_eps,
                gap,
                red.alpha_g,
                self.kappa,
            );
        // Floating-point floor: neither f nor the gap has improved for a long stretch.
        if f < self.best_f || gap < self.best_gap {
            self.best_f = self.best_f.min(f);
            self.best_gap = self.best_gap.min(gap);
            self.no_progress = 0;
        } else {
            self.no_progress += 1;
        }
        Ok(Opened {
            f,
            gap,
            active: self.state.alpha.len(),
            converged,
            stalled: self.no_progress > STALL_ITERATIONS,
        })
    }

    fn step(&mut self, be: &mut B) -> Result<Option<Step>> {
        let step = self.variant.step(&mut self.state, &self.red, be)?;
        // The stall count is of iterations: a device batch's others count too (the next open
        // resets it where the batch made progress).
        if step.kind == StepKind::DeviceBatch {
            let more = (step.size as u64).saturating_sub(1);
            self.no_progress = self
                .no_progress
                .saturating_add(more.min(u32::MAX as u64) as u32);
        }
        Ok(Some(step))
    }

    fn check_yield(&mut self, check: &mut YieldCheck<'_>, be: &mut B) -> Result<bool> {
        (check.check)(&self.state, &self.red, be.up())
    }

    fn certify(&self, prob: &Problem<'_>, be: &mut B) -> Result<(f64, f64)> {
        let be = be.up();
        let (f, g, _) = match self.variant.certify_over() {
            None => {
                if let Some(fg) = be.certify_exact(&self.state.alpha)? {
                    return Ok(fg);
                }
                crate::backend::exact::certify(prob, &self.state.alpha)
            }
            Some(rows) => {
                if let Some(fg) = be.certify_exact_rows(&self.state.alpha, &rows)? {
                    return Ok(fg);
                }
                crate::backend::exact::certify_rows(prob, &self.state.alpha, &rows)
            }
        };
        Ok((f, g))
    }

    fn finish(self) -> (ActiveSet, Option<f64>) {
        (self.state.alpha, None)
    }
}
