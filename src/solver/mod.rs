//! The solvers: one loop, the Frank–Wolfe variants, CVM, sparse FW and SimpleSVM.
//!
//! [`stepper::run`] owns everything that is not a step, for every algorithm: the clock, the
//! stopping rules (the algorithm's own convergence test, iteration cap, time limit, Ctrl-C,
//! stall), observers (progress, CSV trace, then the outcome once), and the certified gap at
//! the end. A [`stepper::Stepper`] holds one algorithm's iterate: [`stepper::FwStepper`] runs
//! a [`Variant`], which only turns one [`Reduction`] into one step (which direction, which
//! step size, and the [`Update`](crate::backend::Update) the backend applies);
//! [`simple_svm::SimpleSvm`] adds a violator and solves its KKT system. [`solve`] picks the
//! stepper; [`shrink`] runs the loop in working-set rounds.

pub mod block_steps;
pub mod cvm;
pub mod device_replay;
pub mod entry;
pub mod fw;
pub mod init;
pub mod kkt;
pub mod mfw;
pub mod partan;
pub mod rounds;
pub mod shrink;
pub mod simple_svm;
pub mod sparse;
pub mod stepper;
pub mod steps;
pub mod swap;
pub mod swap2;
pub mod warm;
pub mod ws;

use crate::active::ActiveSet;
use crate::backend::{BackendStats, Marks, Reduction, Solvable, Upcast};
use crate::error::{Error, Result};
use crate::problem::Problem;
pub use crate::stop::{StopRule, stop_rule_met};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The training algorithms (their command-line names are the `--algorithm` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Algorithm {
    /// Plain Frank–Wolfe (toward steps).
    Fw,
    /// Modified FW: toward or away steps.
    Mfw,
    /// SWAP: the better of a toward and a pairwise step.
    Swap,
    /// SWAP with the second-order choice of the away vertex.
    Swap2,
    /// PARTAN-accelerated FW (the papers' method and settings; the default for randomized
    /// iterations: [`Algorithm::default_for`]).
    Partan,
    /// Working-set FW: SWAP-2o steps on a block of q batched kernel columns per iteration
    /// (the default: [`Algorithm::default_for`]).
    Ws,
    /// Core Vector Machine (Bădoiu–Clarkson core sets with inner pairwise solves).
    Cvm,
    /// Sparse re-weighted FW (active/inactive vectors, pairwise steps).
    #[cfg_attr(feature = "clap", value(name = "sparse-fw"))]
    SparseFw,
    /// SimpleSVM: the active-set solver of LIBSVM's C-SVM dual (a different problem).
    #[cfg_attr(feature = "clap", value(name = "simplesvm"))]
    SimpleSvm,
}

impl Algorithm {
    /// The five Frank–Wolfe variants: one step per iteration on the full problem, each
    /// available with randomized iterations (`--sample`).
    pub const FW: [Algorithm; 5] = [
        Algorithm::Fw,
        Algorithm::Mfw,
        Algorithm::Swap,
        Algorithm::Swap2,
        Algorithm::Partan,
    ];

    /// Every algorithm.
    pub const ALL: [Algorithm; 9] = [
        Algorithm::Fw,
        Algorithm::Mfw,
        Algorithm::Swap,
        Algorithm::Swap2,
        Algorithm::Partan,
        Algorithm::Ws,
        Algorithm::Cvm,
        Algorithm::SparseFw,
        Algorithm::SimpleSvm,
    ];

    /// The algorithm a run gets when its caller names none — the one place this default is
    /// decided, for the library, the command line and the Python package alike, in one
    /// process and across ranks: ws; PARTAN, the papers' method, for randomized iterations
    /// (`sampled`: ws chooses its working set from the whole gradient, which a sample does
    /// not keep).
    pub fn default_for(sampled: bool) -> Algorithm {
        if sampled {
            Algorithm::Partan
        } else {
            Algorithm::Ws
        }
    }

    /// CLI name.
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Fw => "fw",
            Algorithm::Mfw => "mfw",
            Algorithm::Swap => "swap",
            Algorithm::Swap2 => "swap2",
            Algorithm::Partan => "partan",
            Algorithm::Ws => "ws",
            Algorithm::Cvm => "cvm",
            Algorithm::SparseFw => "sparse-fw",
            Algorithm::SimpleSvm => "simplesvm",
        }
    }

    /// The relative gap a run stops at when its caller names none (`--rel-eps`, `rel_tol`,
    /// [`SolverParams::rel_eps`]): [`ws::REL_EPS`] for ws, 1 for the others (no training
    /// point with a negative margin).
    pub fn default_rel_eps(&self) -> f64 {
        match self {
            Algorithm::Ws => ws::REL_EPS,
            _ => 1.0,
        }
    }

    /// The kernel columns' precision when the caller names none: f64 for SimpleSVM, whose α
    /// reach the box C and whose linear solves need the digits; f32 for the others.
    pub fn default_precision(&self) -> crate::backend::cpu::Precision {
        match self {
            Algorithm::SimpleSvm => crate::backend::cpu::Precision::F64,
            _ => crate::backend::cpu::Precision::F32,
        }
    }

    /// True for the algorithms that compute their kernel columns in batched blocks (the
    /// working-set solver), for which the CPU backend lays sparse rows out dense down to a
    /// lower share of non-zeros ([`crate::backend::CpuConfig::batched`]).
    pub fn batched_columns(&self) -> bool {
        matches!(self, Algorithm::Ws)
    }

    /// True for the algorithms that solve the L2-SVM on the simplex (all but SimpleSVM).
    pub fn is_l2svm(&self) -> bool {
        !matches!(self, Algorithm::SimpleSvm)
    }

    /// The problem this algorithm solves on `data` with labels `y`: the L2-SVM with C
    /// ([`Problem::new`]), or for SimpleSVM the C-SVM ([`Problem::c_svm`]).
    pub fn problem<'a>(
        &self,
        data: &'a crate::data::Dataset,
        y: Vec<f64>,
        kernel: crate::kernel::Kernel,
        c: f64,
    ) -> Result<Problem<'a>> {
        self.problem_with_norms(data, y, kernel, c, None)
    }

    /// [`problem`](Self::problem) with the rows' squared norms given where the caller has
    /// them ([`Problem::with_norms`]).
    pub fn problem_with_norms<'a>(
        &self,
        data: &'a crate::data::Dataset,
        y: Vec<f64>,
        kernel: crate::kernel::Kernel,
        c: f64,
        norms: Option<Vec<f64>>,
    ) -> Result<Problem<'a>> {
        if self.is_l2svm() {
            Problem::with_norms(data, y, kernel, c, norms)
        } else {
            Problem::c_svm_with_norms(data, y, kernel, c, norms)
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = match s.to_ascii_lowercase().as_str() {
            "sparsefw" | "sparse_fw" | "m-fw" => "sparse-fw".to_string(),
            "simple-svm" | "simple_svm" => "simplesvm".to_string(),
            other => other.to_string(),
        };
        Algorithm::ALL
            .iter()
            .copied()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown algorithm `{s}` (expected ws, fw, mfw, swap, swap2, partan, cvm, \
                     sparse-fw or simplesvm)"
                )
            })
    }
}

/// Why the solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Duality gap ≤ ε and ≤ rel_eps · 2f.
    Converged,
    /// `--max-iter` reached.
    MaxIter,
    /// `--time-limit` reached.
    TimeLimit,
    /// No step could make progress (numerical floor reached before ε).
    Stalled,
    /// Stopped at the current iterate on request (Ctrl-C, SIGTERM; see [`crate::interrupt`]).
    Interrupted,
    /// Handed back by a [`YieldCheck`] (inside the working-set rounds; never final).
    Yielded,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::Converged => "converged (the stop rule of eps, rel_eps and stop is met)",
            StopReason::MaxIter => "iteration limit",
            StopReason::TimeLimit => "time limit",
            StopReason::Stalled => "stalled (no further decrease possible in floating point)",
            StopReason::Interrupted => "interrupted",
            StopReason::Yielded => "yielded to the working-set rounds",
        })
    }
}

/// Solver settings, validated by [`SolverParams::check`].
#[derive(Debug, Clone)]
pub struct SolverParams {
    /// The algorithm; None: the run's default ([`Algorithm::default_for`], resolved by
    /// [`TrainParams::resolved`](crate::train::TrainParams::resolved); read it with
    /// [`algorithm`](Self::algorithm)).
    pub algorithm: Option<Algorithm>,
    /// Duality-gap tolerance ε (absolute, as in the papers).
    pub eps: f64,
    /// Relative safeguard: also require gap ≤ rel_eps · 2f. With 1 this means min_i g_i ≥ 0
    /// — no training point with a negative margin y_iF(x_i) + α_i/C — which keeps large-C
    /// runs, where f* is tiny and ε = 1e-4 is reached far from the optimum, from stopping
    /// early. `f64::INFINITY` gives the papers' rule alone. None: the algorithm's default
    /// ([`Algorithm::default_rel_eps`]; read it with [`rel_eps`](Self::rel_eps)).
    pub rel_eps: Option<f64>,
    /// Iteration cap.
    pub max_iter: u64,
    /// Wall-clock cap.
    pub time_limit: Option<Duration>,
    /// Seed of the initial sample.
    pub seed: u64,
    /// Number of random points solved exactly to start (0 = one random vertex).
    pub init_size: usize,
    /// Recompute the gap exactly at the end.
    pub certify: bool,
    /// Stopping rule.
    pub stop: StopRule,
    /// SimpleSVM's violator rule and linear solver.
    pub simple: simple_svm::SimpleParams,
    /// The working-set solver's |W| (0: the automatic rule of [`ws`]).
    pub ws_size: usize,
    /// ws on large problems starts from a subsample's solution ([`warm`]).
    pub warm_start: bool,
}

impl Default for SolverParams {
    fn default() -> Self {
        SolverParams {
            algorithm: None,
            eps: 1e-4,
            rel_eps: None,
            max_iter: 10_000_000,
            time_limit: None,
            seed: 1,
            init_size: 20,
            certify: true,
            stop: StopRule::Gap,
            simple: Default::default(),
            ws_size: 0,
            warm_start: true,
        }
    }
}

impl SolverParams {
    /// A time limit of `seconds` for [`time_limit`](Self::time_limit), `name` being the
    /// setting as the user spells it: a positive, finite number of seconds, else
    /// [`ParamError::NotPositive`](crate::error::ParamError::NotPositive); one beyond
    /// [`Duration`]'s range gives the longest limit, which never ends a run.
    pub fn time_limit_secs(
        name: &'static str,
        seconds: f64,
    ) -> std::result::Result<Duration, crate::error::ParamError> {
        crate::error::ParamError::positive(name, seconds)?;
        Ok(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
    }

    /// The algorithm: the one named, else the default of a one-process run without
    /// randomized iterations (ws). Training through [`crate::train`] names one for every
    /// run first ([`TrainParams::resolved`](crate::train::TrainParams::resolved)); a caller
    /// that runs the solver itself on a sampled or distributed backend names an FW variant
    /// (PARTAN is what training picks there).
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
            .unwrap_or_else(|| Algorithm::default_for(false))
    }

    /// The relative tolerance: the one named, else the algorithm's default.
    pub fn rel_eps(&self) -> f64 {
        self.rel_eps
            .unwrap_or_else(|| self.algorithm().default_rel_eps())
    }

    /// Rejects unusable settings.
    pub fn check(&self) -> Result<()> {
        crate::error::ParamError::positive("eps", self.eps)?;
        let rel_eps = self.rel_eps();
        if !(rel_eps > 0.0) {
            return Err(Error::param(format!(
                "rel-eps must be positive (or inf), got {rel_eps}"
            )));
        }
        Ok(())
    }
}

/// The kind of step an iteration took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// CVM: the farthest point joined the core set and the core problem was re-solved.
    Core,
    /// Sparse FW: an inactive vector was activated, then a pairwise step.
    Activate,
    /// Toward the FW vertex.
    Toward,
    /// Away from the worst active vertex.
    Away,
    /// Away step that removed its vertex.
    Drop,
    /// Pairwise (swap) step.
    Swap,
    /// Pairwise step that removed its away vertex.
    SwapDrop,
    /// Working set: SWAP-2o steps on a block of batched columns (size: how many).
    Block,
    /// Working set on the device: a batch of outer iterations run there (size: how many;
    /// [`crate::backend::DeviceLoop`]).
    DeviceBatch,
    /// FW step followed by a PARTAN step.
    Partan,
    /// SimpleSVM: a violator joined the free set and the KKT system was solved (size: how
    /// far α moved toward the system's solution before a bound stopped it, 1 = all the way).
    Violator,
}

impl StepKind {
    /// Name used in traces.
    pub fn name(&self) -> &'static str {
        match self {
            StepKind::Toward => "toward",
            StepKind::Away => "away",
            StepKind::Drop => "drop",
            StepKind::Swap => "swap",
            StepKind::SwapDrop => "swap-drop",
            StepKind::Block => "block",
            StepKind::DeviceBatch => "device-batch",
            StepKind::Partan => "partan",
            StepKind::Core => "core",
            StepKind::Activate => "activate",
            StepKind::Violator => "violator",
        }
    }
}

/// What a variant reports about its step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Kind.
    pub kind: StepKind,
    /// Step size (λ, or μ for the PARTAN part).
    pub size: f64,
}

/// The iterate as the variants see it.
#[derive(Debug, Clone)]
pub struct State {
    /// α.
    pub alpha: ActiveSet,
    /// f(α) = ½αᵀg, resynchronised from the reduction every iteration.
    pub f: f64,
    /// Iterations done.
    pub iter: u64,
}

/// One FW flavour: host-side scalar logic only.
pub trait Variant {
    /// Called once before the first gradient is set (e.g. to enable g⁻).
    fn prepare(&mut self, _be: &mut dyn Solvable) {}

    /// Takes one step from the iterate whose reduction is `red`; updates α, and g through
    /// `be.update`. `state.f` is the current objective.
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step>;

    /// Opens an iteration: the reduction the step will use, the duality gap the stop rule
    /// tests, and whether the run may stop at all. The default is [`Backend::reduce`](crate::backend::Backend::reduce),
    /// Δ = αᵀg − g_s, true; a variant that solves a restricted problem (sparse FW) reports the
    /// gap of that problem.
    fn open(&mut self, state: &State, be: &mut dyn Solvable) -> Result<(Reduction, f64, bool)> {
        let red = be.reduce(&state.alpha)?;
        Ok((red, red.alpha_g - red.g_s, true))
    }

    /// The points over which the final gap is certified: None = all (the default).
    fn certify_over(&self) -> Option<Vec<usize>> {
        None
    }
}

/// A [`Variant`] on the backend object type `B` (`dyn Solvable` or `dyn Marks`): every
/// variant that needs no marks runs on both; one that needs them implements this for the
/// object type that has them (sparse FW: `dyn Marks`).
pub trait VariantOn<B: ?Sized + Upcast> {
    /// [`Variant::prepare`].
    fn prepare(&mut self, be: &mut B);
    /// [`Variant::step`].
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut B) -> Result<Step>;
    /// [`Variant::open`].
    fn open(&mut self, state: &State, be: &mut B) -> Result<(Reduction, f64, bool)>;
    /// [`Variant::certify_over`].
    fn certify_over(&self) -> Option<Vec<usize>>;
}

impl<B: ?Sized + Upcast, V: Variant> VariantOn<B> for V {
    fn prepare(&mut self, be: &mut B) {
        Variant::prepare(self, be.up())
    }
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut B) -> Result<Step> {
        Variant::step(self, state, red, be.up())
    }
    fn open(&mut self, state: &State, be: &mut B) -> Result<(Reduction, f64, bool)> {
        Variant::open(self, state, be.up())
    }
    fn certify_over(&self) -> Option<Vec<usize>> {
        Variant::certify_over(self)
    }
}

/// The backend object types the FW variants run on, and which variants each can run.
pub trait Simplex: Upcast {
    /// A fresh variant object for `params.algorithm()`; an error for SimpleSVM (a stepper of
    /// its own) and for an algorithm this object type lacks the capability for.
    fn variant(params: &SolverParams) -> Result<Box<dyn VariantOn<Self>>>;
}

impl<'a> Simplex for dyn Solvable + 'a {
    fn variant(params: &SolverParams) -> Result<Box<dyn VariantOn<Self>>> {
        core_variant(params)
    }
}

impl<'a> Simplex for dyn Marks + 'a {
    fn variant(params: &SolverParams) -> Result<Box<dyn VariantOn<Self>>> {
        if params.algorithm() == Algorithm::SparseFw {
            return Ok(Box::new(sparse::SparseFw::new(params)));
        }
        core_variant(params)
    }
}

/// The variants that need no marks.
fn core_variant<B: ?Sized + Upcast>(params: &SolverParams) -> Result<Box<dyn VariantOn<B>>> {
    Ok(match params.algorithm() {
        Algorithm::Fw => Box::new(fw::Fw),
        Algorithm::Mfw => Box::new(mfw::Mfw),
        Algorithm::Swap => Box::new(swap::Swap),
        Algorithm::Swap2 => Box::new(swap2::Swap2::default()),
        Algorithm::Partan => Box::new(partan::Partan::default()),
        Algorithm::Ws => Box::new(ws::WorkingSet::new(params)),
        Algorithm::Cvm => Box::new(cvm::Cvm::new(params)),
        Algorithm::SparseFw | Algorithm::SimpleSvm => {
            return Err(needs_marks(params.algorithm()));
        }
    })
}

/// The error of an algorithm that needs marked reductions, asked of a backend without them.
fn needs_marks(algorithm: Algorithm) -> Error {
    Error::param(format!(
        "{algorithm} needs a backend with marked reductions (backend::Marks: the full-gradient \
         CPU or GPU backend), not the sampled one: solve it with solver::solve"
    ))
}

/// What an observer sees after each iteration (before the step of that iteration).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Iterations done.
    pub iter: u64,
    /// Seconds since the start of the solve.
    pub seconds: f64,
    /// f(α).
    pub f: f64,
    /// Duality gap.
    pub gap: f64,
    /// The step that led here (None for the initial point).
    pub step: Option<Step>,
    /// |A|.
    pub active: usize,
}

/// Receives progress; used for progress bars and CSV traces.
pub trait Observer {
    /// Called once per iteration.
    fn observe(&mut self, p: &Progress);

    /// Called once when the solve ends, with its outcome (certified figures included).
    fn finish(&mut self, _result: &SolveResult) {}
}

impl<F: FnMut(&Progress)> Observer for F {
    fn observe(&mut self, p: &Progress) {
        self(p)
    }
}

/// The outcome of a solve.
#[derive(Debug, Clone)]
pub struct SolveResult {
    /// Final α.
    pub alpha: ActiveSet,
    /// Iterations taken.
    pub iterations: u64,
    /// Objective f(α) as tracked.
    pub f: f64,
    /// Duality gap as tracked.
    pub gap: f64,
    /// Exact f (f64 from scratch), when certified.
    pub certified_f: Option<f64>,
    /// Exact duality gap, when certified.
    pub certified_gap: Option<f64>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Seconds spent in initialisation and iterations.
    pub seconds: f64,
    /// Seconds spent certifying.
    pub certify_seconds: f64,
    /// Backend counters.
    pub stats: BackendStats,
    /// The working-set rounds, when the run shrank (see [`shrink`]).
    pub shrink: Option<shrink::ShrinkStats>,
    /// The warm start, when the run had one (see [`warm`]).
    pub warm: Option<warm::WarmStats>,
    /// LIBSVM's rho when the solver has a bias of its own (SimpleSVM's −b); None for the
    /// L2-SVM, whose bias is the +1 in Q (rho = −Σ α_i y_i).
    pub rho: Option<f64>,
    /// g = Qα on this process's rows (in order) at the end of a run by working-set rounds that
    /// asked for no certificate (a warm start's subsample): the solver's own where the last
    /// round converged with every point in W (an estimate in its columns' precision), else the
    /// last exact pass's (exact, or within its screen); None otherwise. The warm start's
    /// extension reads the subsample's own rows from it instead of computing them again.
    pub gradient: Option<Vec<f64>>,
}

pub use stepper::STALL_ITERATIONS;

/// Runs `params.algorithm()` to a stop rule on a backend: an FW variant from the random initial
/// sample, or SimpleSVM (whose problem is [`Problem::c_svm`]'s).
pub fn solve(
    prob: &Problem<'_>,
    be: &mut dyn Marks,
    params: &SolverParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    if params.algorithm() == Algorithm::SimpleSvm {
        check_solve(params, be)?;
        return stepper::run(prob, be, params, observers, None, |be| {
            simple_svm::SimpleSvm::start(prob, be, params)
        });
    }
    solve_from(prob, be, params, observers, None, None)
}

/// [`solve`] on a backend without marks (the sampled iterations'): every FW
/// variant but sparse FW; sparse FW and SimpleSVM, which need [`Marks`], are refused before
/// the run starts.
pub fn solve_plain(
    prob: &Problem<'_>,
    be: &mut dyn Solvable,
    params: &SolverParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    if matches!(
        params.algorithm(),
        Algorithm::SimpleSvm | Algorithm::SparseFw
    ) {
        return Err(needs_marks(params.algorithm()));
    }
    check_solve(params, be)?;
    stepper::run(prob, be, params, observers, None, |be| {
        stepper::FwStepper::start(prob, be, params, None)
    })
}

/// SimpleSVM on a backend over points that `prob` does not hold all of (a distributed run's:
/// `prob` is this rank's part, used only for the parts of the exact certification the backend
/// leaves to it), from every point's label, box and diagonal sample
/// ([`simple_svm::SimpleSvm::start_with`]).
pub fn solve_simple_with(
    prob: &Problem<'_>,
    be: &mut dyn Marks,
    params: &SolverParams,
    observers: &mut [&mut dyn Observer],
    (y, cost, max_diag): (Vec<f64>, Vec<f64>, f64),
) -> Result<SolveResult> {
    check_solve(params, be)?;
    stepper::run(prob, be, params, observers, None, |be| {
        simple_svm::SimpleSvm::start_with(y, cost, max_diag, be, params)
    })
}

/// The settings and backend every solve checks first.
fn check_solve(params: &SolverParams, be: &dyn Solvable) -> Result<()> {
    params.check()?;
    if be.is_empty() {
        return Err(Error::param("empty problem".into()));
    }
    Ok(())
}

/// A check the solver loop calls every `every` iterations (before that iteration's step),
/// with the iterate, its reduction and the backend; `true` ends the run with
/// [`StopReason::Yielded`]. The working-set rounds of [`shrink`] use it to decide when to
/// move to a smaller set.
pub struct YieldCheck<'a> {
    /// Iterations between checks.
    pub every: u64,
    /// The check.
    pub check: &'a mut dyn FnMut(&State, &Reduction, &mut dyn Solvable) -> Result<bool>,
}

/// An FW variant (`params.algorithm()`, not SimpleSVM) from a given α (on the simplex, over
/// `prob`'s points) instead of the random initial sample — with its gradient Qα when the
/// caller has it — optionally with a [`YieldCheck`]: what the working-set rounds of
/// [`shrink`] use.
pub fn solve_from(
    prob: &Problem<'_>,
    be: &mut dyn Marks,
    params: &SolverParams,
    observers: &mut [&mut dyn Observer],
    alpha0: Option<(ActiveSet, Option<Vec<f64>>)>,
    yield_check: Option<YieldCheck<'_>>,
) -> Result<SolveResult> {
    check_solve(params, be)?;
    stepper::run(prob, be, params, observers, yield_check, |be| {
        stepper::FwStepper::start(prob, be, params, alpha0)
    })
}

/// κ = Q_ii for the MEB rule, which needs it constant (a normalized kernel: RBF); read at
/// point 0 through the backend (a distributed one fetches it from its rank).
pub(crate) fn meb_kappa(prob: &Problem<'_>, be: &mut dyn Solvable) -> Result<f64> {
    check_meb_kernel(prob)?;
    be.fetch_rows(&[0])?;
    Ok(be.q_diag(0))
}

/// The MEB rule needs a normalized kernel (k(x, x) constant: RBF).
pub(crate) fn check_meb_kernel(prob: &Problem<'_>) -> Result<()> {
    if matches!(prob.kernel, crate::kernel::Kernel::Rbf { .. }) {
        return Ok(());
    }
    Err(crate::error::ParamError::Kernel {
        option: "stop = meb",
        needs: "a normalized kernel (k(x, x) constant: rbf)",
        kernel: prob.kernel.libsvm_name(),
    }
    .into())
}

/// Applies a toward step of size λ to α: α ← (1−λ)α + λe_s.
pub(crate) fn apply_toward(alpha: &mut ActiveSet, s: usize, lambda: f64) {
    if lambda >= 1.0 {
        alpha.clear();
        alpha.set(s, 1.0);
    } else {
        alpha.scale(1.0 - lambda);
        let a = alpha.get(s);
        alpha.set(s, a + lambda);
    }
}
