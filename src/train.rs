//! Training end to end: kernel parameters (γ heuristic), label handling, the binary L2-SVM or
//! one-versus-one over any variant (docs/METHODS.md), and the LIBSVM-layout model.

use crate::backend::Device;
use crate::backend::cpu::CpuConfig;
use crate::data::Dataset;
use crate::duplicates::merge_duplicates;
use crate::error::{Error, ParamError, Result};
use crate::kernel::{Kernel, gamma_heuristic};
use crate::model::{Model, sv_dataset};
use crate::problem::Problem;
use crate::solver::{Algorithm, Observer, SolveResult, SolverParams, solve_plain};
use std::time::{Duration, Instant};

mod folds;
pub use folds::{
    CvReport, FoldObservers, PROBABILITY_FOLDS, add_probabilities, add_probabilities_dealt,
    cross_validate, cross_validate_folds, stratified_folds,
};

/// Kernel family chosen by the user (the aliases are svm-train's `-t` numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum KernelKind {
    /// exp(−γ‖x−z‖²) (svm-train's -t 2)
    #[default]
    #[cfg_attr(feature = "clap", value(alias = "2"))]
    Rbf,
    /// (γ⟨x,z⟩ + coef0)^degree (-t 1)
    #[cfg_attr(feature = "clap", value(alias = "polynomial", alias = "1"))]
    Poly,
    /// ⟨x,z⟩ (-t 0)
    #[cfg_attr(feature = "clap", value(alias = "0"))]
    Linear,
    /// tanh(γ⟨x,z⟩ + coef0), not positive semi-definite in general (-t 3)
    #[cfg_attr(feature = "clap", value(alias = "3"))]
    Sigmoid,
}

/// γ as given: a number, or the papers' heuristic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gamma {
    /// 1 / mean squared distance over a seeded sample of pairs.
    Auto,
    /// A fixed value.
    Value(f64),
}

/// Number of random pairs used by `--gamma auto`.
pub const GAMMA_PAIRS: usize = 10_000;

/// Training settings.
#[derive(Debug, Clone)]
pub struct TrainParams {
    /// Kernel family.
    pub kernel: KernelKind,
    /// γ (RBF, polynomial).
    pub gamma: Gamma,
    /// coef0 (polynomial).
    pub coef0: f64,
    /// Degree (polynomial).
    pub degree: u32,
    /// C.
    pub c: f64,
    /// Class weights (label, w): class `label` gets C·w, in every solver and in each
    /// one-versus-one pair its two classes' own (LIBSVM's `-wi`); unlisted classes 1.
    pub class_weights: Vec<(f64, f64)>,
    /// Per-row weights (scikit-learn's `sample_weight`), one per row of the data `train`
    /// gets: row i's cost is C·s_i (times its class weight). Positive; every backend (the GPU
    /// divides a row's diagonal term 1/C by its weight rounded to f32).
    pub sample_weights: Option<std::sync::Arc<[f64]>>,
    /// Novelty detection (LIBSVM's `-s 2`) instead of classification: the labels are ignored
    /// and the model is the smallest ball around the data in feature space
    /// ([`train_one_class`]).
    pub one_class: bool,
    /// Solver settings.
    pub solver: SolverParams,
    /// CPU backend settings (also used when a GPU run falls back to the CPU).
    pub cpu: CpuConfig,
    /// Where to run.
    pub device: Device,
    /// Randomized iterations: |S| per draw (0 = off; Frandi, Ñanculef, Suykens, *A
    /// PARTAN-Accelerated Frank-Wolfe Algorithm for Large-Scale SVM Classification*, 2015, use
    /// 194). See [`crate::backend::sampled`].
    pub sample: usize,
    /// Working-set shrinking (FW variants and CVM without `sample`; see
    /// [`crate::solver::shrink`]), on by default; None = every iteration over all points.
    pub shrink: Option<crate::solver::shrink::ShrinkParams>,
    /// Runs over ranks split by rows ([`crate::dist`]): each rank sums its own part of αᵀg
    /// (and αᵀg⁻) and the away vertex comes from one max-location reduction — three numbers
    /// per iteration instead of the active set's gradient entries — at the price of the
    /// single-process run to the bit (the sums are added in another order: the same optimum
    /// within the certified gaps). No effect in one process.
    pub partial_sums: bool,
    /// Repeated points — equal features and label — trained as one point each whose cost is
    /// the sum of theirs (`duplicates`): the same optimum and decision function over
    /// fewer points, one support vector per group. None: the algorithm's default, merged for
    /// the working-set solver ([`Algorithm::Ws`]) and kept for the papers' per-iteration
    /// variants, whose iteration counts are compared with the published ones.
    pub merge_duplicates: Option<bool>,
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams {
            kernel: KernelKind::Rbf,
            gamma: Gamma::Auto,
            coef0: 0.0,
            degree: 3,
            c: 1.0,
            class_weights: Vec::new(),
            sample_weights: None,
            one_class: false,
            solver: SolverParams::default(),
            cpu: CpuConfig::default(),
            device: Device::Cpu,
            sample: 0,
            shrink: Some(Default::default()),
            partial_sums: false,
            merge_duplicates: None,
        }
    }
}

impl TrainParams {
    /// These settings with every choice left unset decided for the run — with randomized
    /// iterations or not, in one process or across ranks alike: the algorithm
    /// ([`Algorithm::default_for`]), its relative tolerance ([`Algorithm::default_rel_eps`])
    /// and the columns' precision ([`Algorithm::default_precision`]). The one place these
    /// defaults are decided: [`train`] and every other entry resolve through it, and the
    /// command line and the Python package leave to it what their users leave unset.
    pub fn resolved(&self) -> TrainParams {
        let mut p = self.clone();
        let alg = self
            .solver
            .algorithm
            .unwrap_or_else(|| Algorithm::default_for(self.sample > 0));
        p.solver.algorithm = Some(alg);
        p.solver.rel_eps = Some(self.solver.rel_eps.unwrap_or_else(|| alg.default_rel_eps()));
        p.cpu.precision = Some(
            self.cpu
                .precision
                .unwrap_or_else(|| alg.default_precision()),
        );
        p.cpu.batched = alg.batched_columns();
        p
    }

    /// The algorithm this run trains with (as [`resolved`](Self::resolved) decides it).
    pub fn algorithm(&self) -> Algorithm {
        self.solver
            .algorithm
            .unwrap_or_else(|| Algorithm::default_for(self.sample > 0))
    }

    /// The sampled iterations' settings (`--sample`; the safeguard of two extra draws of
    /// Frandi et al. 2015).
    pub fn sampled_config(&self) -> crate::backend::sampled::SampledConfig {
        crate::backend::sampled::SampledConfig {
            sample: self.sample,
            seed: self.solver.seed,
            eps: self.solver.eps,
            rel_eps: self.resolved().solver.rel_eps(),
            extra_draws: 2,
            stop: self.solver.stop,
        }
    }

    /// These settings with γ fixed to `kernel`'s (as resolved once on the whole data), so that
    /// trainings on parts of it (folds, pairs) keep the same kernel.
    pub fn with_gamma_of(&self, kernel: &Kernel) -> TrainParams {
        TrainParams {
            gamma: kernel.gamma().map_or(self.gamma, Gamma::Value),
            ..self.clone()
        }
    }

    /// These settings for the data made of rows `rows` of the current data: the sample
    /// weights of those rows (the rest unchanged).
    pub fn for_rows(&self, rows: &[usize]) -> TrainParams {
        TrainParams {
            sample_weights: self
                .sample_weights
                .as_ref()
                .map(|w| rows.iter().map(|&i| w[i]).collect()),
            ..self.clone()
        }
    }

    /// Checks that the sample weights, if any, give one weight per row of `ds`.
    fn check_sample_weights(&self, ds: &Dataset) -> Result<()> {
        match &self.sample_weights {
            Some(w) if w.len() != ds.len() => Err(ParamError::Length {
                what: "sample weights",
                got: w.len(),
                rows: ds.len(),
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// The class weight of `label`: 1 unless [`class_weights`](Self::class_weights) lists it
    /// (the last entry wins, as in svm-train).
    pub fn class_weight_of(&self, label: f64) -> f64 {
        self.class_weights
            .iter()
            .rev()
            .find(|&&(l, _)| l == label)
            .map_or(1.0, |&(_, w)| w)
    }

    /// The concrete kernel for a dataset (resolving `--gamma auto`).
    pub fn resolve_kernel(&self, ds: &Dataset) -> Result<Kernel> {
        let gamma = match self.gamma {
            Gamma::Value(g) => g,
            Gamma::Auto => gamma_heuristic(ds, GAMMA_PAIRS, self.solver.seed),
        };
        let k = match self.kernel {
            KernelKind::Linear => Kernel::Linear,
            KernelKind::Rbf => Kernel::Rbf { gamma },
            KernelKind::Poly => Kernel::Poly {
                gamma,
                coef0: self.coef0,
                degree: self.degree,
            },
            KernelKind::Sigmoid => Kernel::Sigmoid {
                gamma,
                coef0: self.coef0,
            },
        };
        k.check()?;
        Ok(k)
    }
}

/// Training settings that passed [`TrainParams::check`] (linfa's `ParamGuard` shape), with
/// every choice left unset decided ([`TrainParams::resolved`]): the training steps below
/// [`train`] take this, so each setting is checked and decided once, up front.
#[derive(Debug, Clone)]
pub struct Checked(TrainParams);

impl std::ops::Deref for Checked {
    type Target = TrainParams;
    fn deref(&self) -> &TrainParams {
        &self.0
    }
}

/// The algorithms on the simplex that take every mode (sampled iterations, one-class).
const SIMPLEX_WITH_MODES: &str = "fw, mfw, swap, swap2, partan and cvm";

impl TrainParams {
    /// Checks every setting that does not depend on the data: the solver's (ε, rel-eps), C,
    /// a fixed γ, class and sample weights, and what the algorithm cannot do (sampled
    /// iterations or one-class training for sparse FW and SimpleSVM, the MEB rule for
    /// SimpleSVM). What depends on the data (the number of sample weights, two classes, γ
    /// auto, the kernel one-class needs) is checked when training reaches it. The settings
    /// come back [`resolved`](Self::resolved), for a run in one process or across ranks.
    pub fn check(&self) -> Result<Checked> {
        let resolved = self.resolved();
        resolved.check_resolved()?;
        Ok(Checked(resolved))
    }

    fn check_resolved(&self) -> Result<()> {
        self.solver.check()?;
        ParamError::positive("C", self.c)?;
        if let Gamma::Value(g) = self.gamma {
            ParamError::positive("gamma", g)?;
        }
        for &(label, value) in &self.class_weights {
            if !(value > 0.0) || !value.is_finite() {
                return Err(ParamError::ClassWeight { label, value }.into());
            }
        }
        if let Some(w) = &self.sample_weights {
            crate::problem::check_row_weights("sample weights", w)?;
        }
        let alg = self.algorithm();
        let unsupported = |option| ParamError::Unsupported {
            option,
            supported: SIMPLEX_WITH_MODES,
            algorithm: alg.name(),
        };
        let limited = matches!(alg, Algorithm::SparseFw | Algorithm::SimpleSvm);
        // ws chooses its working set from the whole gradient, which sampling does not keep.
        if self.sample > 0 && (limited || alg == Algorithm::Ws) {
            return Err(unsupported("sampled iterations (sample)").into());
        }
        if self.one_class && limited {
            return Err(unsupported("one-class training").into());
        }
        if self.merge_duplicates == Some(true) && (limited || self.one_class) {
            return Err(ParamError::Unsupported {
                option: "merged duplicates",
                supported: "the L2-SVM's classifiers (ws, fw, mfw, swap, swap2, partan, cvm)",
                algorithm: if self.one_class {
                    "one-class training"
                } else {
                    alg.name()
                },
            }
            .into());
        }
        if self.solver.stop == crate::solver::StopRule::Meb && !alg.is_l2svm() {
            return Err(ParamError::Unsupported {
                option: "stop = meb",
                supported: "the L2-SVM's algorithms (simplesvm stops on its KKT violation)",
                algorithm: alg.name(),
            }
            .into());
        }
        Ok(())
    }
}

impl Checked {
    /// Whether the classifier's repeated points are merged ([`TrainParams::merge_duplicates`]).
    pub fn merges_duplicates(&self) -> bool {
        self.merge_duplicates
            .unwrap_or(self.algorithm() == Algorithm::Ws && !self.one_class)
    }
}

/// One binary sub-problem's outcome.
#[derive(Debug, Clone)]
pub struct PairReport {
    /// (positive class, negative class).
    pub classes: (f64, f64),
    /// Training points in the sub-problem.
    pub m: usize,
    /// The points the solver saw when repeated ones were merged
    /// ([`TrainParams::merge_duplicates`]); None when they were not.
    pub merged: Option<usize>,
    /// Solver outcome (α indexed within the sub-problem, over the merged points if merged).
    pub result: SolveResult,
}

/// Context given to the observer factory for each binary sub-problem.
#[derive(Debug, Clone, Copy)]
pub struct PairInfo {
    /// Index of the pair (0-based).
    pub index: usize,
    /// Number of pairs.
    pub count: usize,
    /// Classes (positive, negative).
    pub classes: (f64, f64),
    /// Points in the sub-problem.
    pub m: usize,
}

/// Each row's class: its label's place in `labels` (which holds every label of `ds`).
fn class_indices(ds: &Dataset, labels: &[f64]) -> Vec<usize> {
    ds.labels
        .iter()
        .map(|y| labels.iter().position(|l| l == y).unwrap_or(0))
        .collect()
}

/// LIBSVM's class order: first appearance, except that a {−1, +1} problem lists +1 first.
pub fn class_order(ds: &Dataset) -> Vec<f64> {
    let mut c = ds.classes();
    if c.len() == 2 && c[0] == -1.0 && c[1] == 1.0 {
        c.swap(0, 1);
    }
    c
}

/// Trains a model on `ds`; `observers` is asked for the observers of each binary sub-problem.
///
/// A time limit (`params.solver.time_limit`) holds for the whole training, counted from this
/// call (one that reaches beyond the clock's range is none): with several class pairs, pair p
/// must be done when its share of the time has passed, its share growing with the points of
/// the pairs up to it (time a pair leaves unused goes to the pairs after it). A run stopped by
/// the limit or by [`crate::interrupt`] keeps its iterate, and says in its report whether an
/// exact pass certified it.
pub fn train(
    ds: &Dataset,
    params: &TrainParams,
    observers: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
) -> Result<(Model, Vec<PairReport>)> {
    let start = Instant::now();
    let deadline = params
        .solver
        .time_limit
        .filter(|&t| crate::budget::deadline_after(start, t).is_some())
        .map(|t| (start, t));
    let _memory = crate::backend::CacheMemoryScope;
    crate::budget::within(deadline.map(|(s, t)| s + t), || {
        train_within(ds, params, deadline, observers)
    })
}

/// [`train`] within the time limit's budget, which started at `deadline.0` and lasts
/// `deadline.1`.
fn train_within(
    ds: &Dataset,
    params: &TrainParams,
    deadline: Option<(Instant, Duration)>,
    observers: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
) -> Result<(Model, Vec<PairReport>)> {
    let params = params.check()?;
    params.check_sample_weights(ds)?;
    if params.one_class {
        return one_class(ds, &params, observers);
    }
    let labels = class_order(ds);
    if labels.len() < 2 {
        return Err(Error::param(format!(
            "the training data have one class ({}); at least two are needed",
            labels.first().copied().unwrap_or(f64::NAN)
        )));
    }
    let kernel = params.resolve_kernel(ds)?;
    let class_of = class_indices(ds, &labels);
    let k = labels.len();
    let mut count = vec![0usize; k];
    for &c in &class_of {
        count[c] += 1;
    }
    let shared = (k > 2).then(|| SharedRows::new(ds, params.merges_duplicates()));
    let pairs = class_pairs(ds, &labels, &class_of, &count, shared.as_ref());
    let until = time_shares(&pairs, 0..pairs.len(), deadline);
    let one_until = |pair: &ClassPair<'_>, obs: Vec<Box<dyn Observer>>, until: Option<Instant>| {
        crate::budget::within(until, || train_pair(ds, &params, kernel, pair, obs))
    };
    let one =
        |pair: &ClassPair<'_>, obs: Vec<Box<dyn Observer>>| one_until(pair, obs, until[pair.index]);
    let mut outcomes = Vec::with_capacity(pairs.len());
    let mut first = Vec::new();
    if let Some(p) = pairs.first() {
        first = observers(&p.info());
    }
    if parallel_pairs(&params, &pairs) && first.is_empty() {
        let rest: Vec<Vec<Box<dyn Observer>>> =
            pairs[1..].iter().map(|p| observers(&p.info())).collect();
        if rest.iter().all(|o| o.is_empty()) {
            // No observer to call from another thread: the pairs, each solved on one core,
            // run side by side (a pair this small keeps a second core idle otherwise), as
            // rayon tasks: a pair's rayon passes (its start, its certification) then run on
            // its own worker instead of waiting on threads the other pairs keep busy, and its
            // team passes run serially.
            //
            // The largest pairs first, each worker taking the next one left when it is done
            // with its own: the last pairs to end are small ones, so the cores finish
            // together. Each pair's share of the time limit follows that order.
            let mut order: Vec<usize> = (0..pairs.len()).collect();
            order.sort_by_key(|&t| std::cmp::Reverse(pairs[t].m));
            let until = time_shares(&pairs, order.iter().copied(), deadline);
            let budget = crate::budget::current();
            let next = std::sync::atomic::AtomicUsize::new(0);
            let slots: Vec<std::sync::Mutex<Option<Result<PairOutcome>>>> =
                pairs.iter().map(|_| std::sync::Mutex::new(None)).collect();
            rayon::scope(|scope| {
                for _ in 0..rayon::current_num_threads().min(pairs.len()) {
                    scope.spawn(|_| {
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&t) = order.get(i) else { break };
                            let r = crate::team::serially(|| {
                                crate::budget::adopt(budget.clone(), || {
                                    one_until(&pairs[t], Vec::new(), until[t])
                                })
                            });
                            *slots[t].lock().expect("no pair panics holding it") = Some(r);
                        }
                    });
                }
            });
            outcomes = slots
                .into_iter()
                .map(|s| {
                    s.into_inner()
                        .expect("no pair panics holding it")
                        .expect("every pair ran")
                })
                .collect::<Result<Vec<_>>>()?;
        } else {
            outcomes.push(one(&pairs[0], first)?);
            for (p, obs) in pairs[1..].iter().zip(rest) {
                outcomes.push(one(p, obs)?);
            }
        }
    } else {
        for (t, p) in pairs.iter().enumerate() {
            let obs = if t == 0 {
                std::mem::take(&mut first)
            } else {
                observers(&p.info())
            };
            outcomes.push(one(p, obs)?);
        }
    }
    Ok(assemble(ds, kernel, labels, &class_of, outcomes))
}

/// When each pair must be done (by pair index), the pairs run in the order `order`: pair p
/// when its share of the time limit has passed, its share growing with the points of the
/// pairs run up to it over all pairs' (time a pair leaves unused goes to the pairs after it).
/// None everywhere without a limit.
fn time_shares(
    pairs: &[ClassPair<'_>],
    order: impl Iterator<Item = usize>,
    deadline: Option<(Instant, Duration)>,
) -> Vec<Option<Instant>> {
    let all: usize = pairs.iter().map(|p| p.m).sum();
    let mut done = 0usize;
    let mut until = vec![None; pairs.len()];
    for t in order {
        done += pairs[t].m;
        until[t] = deadline.and_then(|(s, d)| {
            crate::budget::deadline_after(s, d.mul_f64(done as f64 / all as f64))
        });
    }
    until
}

/// Every class pair of a one-versus-one training in LIBSVM's order, (0, 1), (0, 2), …, each
/// with its number of points (`count`: per class).
fn class_pairs<'a>(
    ds: &Dataset,
    labels: &'a [f64],
    class_of: &'a [usize],
    count: &[usize],
    shared: Option<&'a SharedRows>,
) -> Vec<ClassPair<'a>> {
    let k = labels.len();
    let mut pairs = Vec::with_capacity(k * (k - 1) / 2);
    for a in 0..k {
        for b in a + 1..k {
            pairs.push(ClassPair {
                a,
                b,
                index: pairs.len(),
                m: if k == 2 {
                    ds.len()
                } else {
                    count[a] + count[b]
                },
                labels,
                class_of,
                shared,
            });
        }
    }
    pairs
}

/// True when the class pairs are better trained side by side, each on one core: several
/// pairs, on the CPU, more than one core, and pairs small enough that one of them leaves the
/// other cores idle (below [`PARALLEL_PAIR_POINTS`] points each).
fn parallel_pairs(params: &Checked, pairs: &[ClassPair<'_>]) -> bool {
    pairs.len() > 1
        && matches!(params.device, crate::backend::Device::Cpu)
        && rayon::current_num_threads() > 1
        && pairs.iter().all(|p| p.m < PARALLEL_PAIR_POINTS)
}

/// Pairs of fewer points than this run side by side on a multi-core CPU: below it a pair's
/// column passes are too short to split across cores (one chunk of rows or two).
pub const PARALLEL_PAIR_POINTS: usize = 50_000;

/// The model of the pairs' `outcomes` (in pair order) and their reports.
fn assemble(
    ds: &Dataset,
    kernel: Kernel,
    labels: Vec<f64>,
    class_of: &[usize],
    outcomes: Vec<PairOutcome>,
) -> (Model, Vec<PairReport>) {
    let k = labels.len();
    let mut sv = SvCoefficients::new(k);
    let mut pair = 0;
    for a in 0..k {
        for b in a + 1..k {
            for &(gi, v) in &outcomes[pair].svs {
                let c = class_of[gi];
                sv.set(c, if c == a { b } else { a }, gi, v, || ());
            }
            pair += 1;
        }
    }
    let rho = outcomes.iter().map(|p| p.rho).collect();
    let reports = outcomes.into_iter().map(|p| p.report).collect();
    (
        sv.into_model(kernel, labels, rho, |rows, _, y| sv_dataset(ds, rows, y)),
        reports,
    )
}

/// One class pair trained for [`train_dealt`]: its index, ρ, its support vectors as (training
/// row of `ds`, α_i y_i) by row, and its report.
#[derive(Debug, Clone)]
pub struct PairOutcome {
    /// Index of the pair (LIBSVM's order: (0,1), (0,2), …).
    pub index: usize,
    /// The pair's bias ρ.
    pub rho: f64,
    /// (row of the training data, α_i y_i) of each support vector.
    pub svs: Vec<(usize, f64)>,
    /// The pair's report.
    pub report: PairReport,
}

/// [`train`] of a model with several class pairs, trained only where `mine(pair index)` says
/// so; `share` is given this process's pairs and returns every pair (a distributed run
/// exchanges them between the processes that share the pairs out). The model is the one
/// [`train`] builds once every pair is in. Binary and one-class problems (and sample weights
/// on a GPU device) go to [`train`] whole.
pub fn train_dealt(
    ds: &Dataset,
    params: &TrainParams,
    observers: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
    mine: &dyn Fn(usize) -> bool,
    share: &mut dyn FnMut(Result<Vec<PairOutcome>>) -> Result<Vec<PairOutcome>>,
) -> Result<(Model, Vec<PairReport>)> {
    let checked = params.check()?;
    let _memory = crate::backend::CacheMemoryScope;
    // What `train` treats apart goes there.
    if checked.one_class || class_order(ds).len() < 3 {
        return train(ds, params, observers);
    }
    checked.check_sample_weights(ds)?;
    let labels = class_order(ds);
    let kernel = checked.resolve_kernel(ds)?;
    let class_of = class_indices(ds, &labels);
    let k = labels.len();
    let mut count = vec![0usize; k];
    for &c in &class_of {
        count[c] += 1;
    }
    let shared = (k > 2).then(|| SharedRows::new(ds, checked.merges_duplicates()));
    let pairs = class_pairs(ds, &labels, &class_of, &count, shared.as_ref());
    // This process's pairs; an error is handed to `share` too (the others wait there).
    let own = (|| -> Result<Vec<PairOutcome>> {
        let mut own = Vec::new();
        for pair in pairs.iter().filter(|p| mine(p.index)) {
            own.push(train_pair(
                ds,
                &checked,
                kernel,
                pair,
                observers(&pair.info()),
            )?);
        }
        Ok(own)
    })();
    let mut all = share(own)?;
    all.sort_by_key(|p| p.index);
    if all.len() != pairs.len() || all.iter().enumerate().any(|(t, p)| p.index != t) {
        return Err(Error::Backend(format!(
            "{} of the {} class pairs came back",
            all.len(),
            pairs.len()
        )));
    }
    Ok(assemble(ds, kernel, labels, &class_of, all))
}

/// One class pair of a one-versus-one training: classes `a` < `b` (indices into `labels`),
/// the pair's index, and every row's class.
struct ClassPair<'a> {
    a: usize,
    b: usize,
    index: usize,
    /// Points of the pair (before duplicates merge).
    m: usize,
    labels: &'a [f64],
    class_of: &'a [usize],
    /// What every pair of a multi-class training takes from the whole dataset.
    shared: Option<&'a SharedRows>,
}

/// Per-row facts of the whole dataset computed once for all the class pairs of a multi-class
/// training (each pair would otherwise recompute them over its own rows).
struct SharedRows {
    /// ‖x_i‖², as [`Problem::new`] computes them.
    norms: Vec<f64>,
    /// The distinct rows (where duplicates are merged).
    distinct: Option<crate::problem::DistinctRows>,
}

impl SharedRows {
    fn new(ds: &Dataset, merges: bool) -> SharedRows {
        use rayon::prelude::*;
        let norms = (0..ds.len())
            .into_par_iter()
            .map(|i| ds.row(i).sq_norm())
            .collect();
        SharedRows {
            norms,
            distinct: merges.then(|| crate::problem::distinct_rows_of(ds)),
        }
    }
}

impl ClassPair<'_> {
    /// What the observer factory is told of the pair.
    fn info(&self) -> PairInfo {
        let k = self.labels.len();
        PairInfo {
            index: self.index,
            count: k * (k - 1) / 2,
            classes: (self.labels[self.a], self.labels[self.b]),
            m: self.m,
        }
    }
}

/// Per class, the training rows of its SVs with their k − 1 coefficients (LIBSVM's layout:
/// SV of class c, in the model of pair (c, d), stores its coefficient in row d − 1 if d > c,
/// else row d), and what the caller keeps of each SV's row (`R`: nothing in one process, where
/// the rows are the dataset's; the row itself in a distributed run, where it came from its
/// rank).
pub(crate) struct SvCoefficients<R = ()> {
    coef: Vec<std::collections::BTreeMap<usize, (R, Vec<f64>)>>,
}

impl<R> SvCoefficients<R> {
    pub(crate) fn new(k: usize) -> Self {
        SvCoefficients {
            coef: (0..k).map(|_| Default::default()).collect(),
        }
    }

    /// Row `gi` (of class `c`) has coefficient `v` against class `other`; `row` gives its
    /// payload the first time the row is seen.
    pub(crate) fn set(
        &mut self,
        c: usize,
        other: usize,
        gi: usize,
        v: f64,
        row: impl FnOnce() -> R,
    ) {
        let k = self.coef.len();
        let slot = if other > c { other - 1 } else { other };
        self.coef[c]
            .entry(gi)
            .or_insert_with(|| (row(), vec![0.0; k - 1]))
            .1[slot] = v;
    }

    /// The model: SVs grouped by class in label order, each class's by training row; `sv`
    /// makes the support vectors' dataset from their rows, payloads and labels.
    pub(crate) fn into_model(
        self,
        kernel: Kernel,
        labels: Vec<f64>,
        rho: Vec<f64>,
        sv: impl FnOnce(&[usize], Vec<R>, Vec<f64>) -> Dataset,
    ) -> Model {
        let k = labels.len();
        let (mut sv_rows, mut sv_labels, mut payload) = (Vec::new(), Vec::new(), Vec::new());
        let mut nr_sv = vec![0; k];
        let mut sv_coef = vec![Vec::new(); k - 1];
        for (c, rows) in self.coef.into_iter().enumerate() {
            for (gi, (r, cs)) in rows {
                sv_rows.push(gi);
                sv_labels.push(labels[c]);
                payload.push(r);
                for (t, v) in cs.into_iter().enumerate() {
                    sv_coef[t].push(v);
                }
                nr_sv[c] += 1;
            }
        }
        Model {
            kernel,
            labels,
            nr_sv,
            sv: sv(&sv_rows, payload, sv_labels),
            sv_coef,
            rho,
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: false,
            sv_rows,
        }
    }
}

/// Trains the binary problem of one class pair (+1 = class a) under the observers `obs`.
fn train_pair(
    ds: &Dataset,
    params: &Checked,
    kernel: Kernel,
    pair: &ClassPair<'_>,
    mut obs: Vec<Box<dyn Observer>>,
) -> Result<PairOutcome> {
    let (a, b, class_of) = (pair.a, pair.b, pair.class_of);
    let k = pair.labels.len();
    let mut rows: Vec<usize> = if k == 2 {
        (0..ds.len()).collect()
    } else {
        (0..ds.len())
            .filter(|&i| class_of[i] == a || class_of[i] == b)
            .collect()
    };
    let mut y: Vec<f64> = rows
        .iter()
        .map(|&i| if class_of[i] == a { 1.0 } else { -1.0 })
        .collect();
    let mut weights: Option<Vec<f64>> = params
        .sample_weights
        .as_ref()
        .map(|w| rows.iter().map(|&i| w[i]).collect());
    let m = rows.len();
    let mut merged = None;
    if params.merges_duplicates() {
        let groups = match pair.shared.and_then(|s| s.distinct.as_ref()) {
            // The whole dataset's distinct rows number the pair's (none when it has no
            // duplicates, and then neither has the pair).
            Some(d) if d.rows.len() == ds.len() => None,
            Some(d) => {
                let id: Vec<u32> = rows.iter().map(|&i| d.rep[i]).collect();
                crate::duplicates::merge_by_id(&id, d.rows.len(), &y, weights.as_deref())
            }
            None if k == 2 => merge_duplicates(ds, &y, weights.as_deref()),
            None => merge_duplicates(&ds.subset(&rows), &y, weights.as_deref()),
        };
        if let Some(g) = groups {
            y = g.rows.iter().map(|&r| y[r]).collect();
            rows = g.rows.iter().map(|&r| rows[r]).collect();
            weights = Some(g.weights);
            merged = Some(rows.len());
        }
    }
    let sub = (rows.len() < ds.len()).then(|| ds.subset(&rows));
    let data = sub.as_ref().unwrap_or(ds);
    let norms = pair
        .shared
        .map(|s| rows.iter().map(|&i| s.norms[i]).collect());
    let classes = (pair.labels[a], pair.labels[b]);
    let alg = params.solver.algorithm();
    let mut prob = alg
        .problem_with_norms(data, y, kernel, params.c, norms)?
        .with_class_weights(
            params.class_weight_of(classes.0),
            params.class_weight_of(classes.1),
        )?;
    if let Some(w) = weights {
        prob = prob.with_row_weights(w)?;
    }
    let mut obs_refs: Vec<&mut dyn Observer> = obs
        .iter_mut()
        .map(|o| o.as_mut() as &mut dyn Observer)
        .collect();
    let pair_device = if sub.is_none() {
        params.device.clone()
    } else {
        params.device.restrict(&rows)
    };
    let result = solve_one(&prob, params, &pair_device, &mut obs_refs)?;
    let mut r = 0.0;
    let mut svs = Vec::with_capacity(result.alpha.len());
    for (li, al) in result.alpha.iter() {
        let yi = prob.y[li];
        r -= al * yi;
        svs.push((rows[li], al * yi));
    }
    Ok(PairOutcome {
        index: pair.index,
        rho: result.rho.unwrap_or(r),
        svs,
        report: PairReport {
            classes,
            m,
            merged,
            result,
        },
    })
}

/// One-class training (novelty detection, LIBSVM's `-s 2`): the problem of docs/METHODS.md
/// with every label +1, min_α αᵀ(K + 1 + I/C)α on the simplex, is the minimum enclosing ball of
/// the points in the feature space of k̃ = k + δ/C (the Core Vector Machine view of Ñanculef,
/// Frandi, Sartori, Allende, *A Novel Frank-Wolfe Algorithm. Analysis and Applications to
/// Large-Scale SVM Training*, 2014; the constant 1 adds (Σα)² = 1 and moves nothing): the
/// centre is c = Σ α_i φ(x_i), and with k(x, x) = 1 (RBF) a point lies inside the ball,
/// ‖φ(x) − c‖² ≤ R² = 1 + 1/C − αᵀK̃α, exactly when Σ α_i k(x_i, x) ≥ αᵀK̃α = 2f − 1. So the
/// model is LIBSVM's one-class layout with sv_coef = α and rho = 2f − 1 (f the certified
/// objective), and +1 means inside. Smaller C widens the slack: more training points fall
/// outside (the SVs: a point with α_i > 0 lies outside by α_i/C). RBF only (the test needs
/// k(x, x) constant); every FW variant and the CVM train it.
pub fn train_one_class(
    ds: &Dataset,
    params: &TrainParams,
    observers: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
) -> Result<(Model, Vec<PairReport>)> {
    let params = TrainParams {
        one_class: true,
        ..params.clone()
    };
    let params = params.check()?;
    params.check_sample_weights(ds)?;
    let _memory = crate::backend::CacheMemoryScope;
    one_class(ds, &params, observers)
}

/// [`train_one_class`] with checked settings and sample weights the device takes.
fn one_class(
    ds: &Dataset,
    params: &Checked,
    observers: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
) -> Result<(Model, Vec<PairReport>)> {
    let kernel = params.resolve_kernel(ds)?;
    if !matches!(kernel, Kernel::Rbf { .. }) {
        return Err(ParamError::Kernel {
            option: "one-class training",
            needs: "the rbf kernel (its ball test needs k(x, x) constant)",
            kernel: kernel.libsvm_name(),
        }
        .into());
    }
    let m = ds.len();
    if m == 0 {
        return Err(Error::param("no training rows".into()));
    }
    let mut prob = Problem::new(ds, vec![1.0; m], kernel, params.c)?;
    if let Some(w) = &params.sample_weights {
        prob = prob.with_row_weights(w.to_vec())?;
    }
    let info = PairInfo {
        index: 0,
        count: 1,
        classes: (1.0, -1.0),
        m,
    };
    let mut obs = observers(&info);
    let mut obs_refs: Vec<&mut dyn Observer> = obs
        .iter_mut()
        .map(|o| o.as_mut() as &mut dyn Observer)
        .collect();
    let result = solve_one(&prob, params, &params.device, &mut obs_refs)?;
    let f = result.certified_f.unwrap_or(result.f);
    let mut sv: Vec<(usize, f64)> = result.alpha.iter().collect();
    sv.sort_unstable_by_key(|&(i, _)| i);
    let rows: Vec<usize> = sv.iter().map(|&(i, _)| i).collect();
    let model = Model::one_class(kernel, &sv, sv_dataset(ds, &rows, vec![1.0; rows.len()]), f);
    let report = PairReport {
        classes: (1.0, -1.0),
        m,
        merged: None,
        result,
    };
    Ok((model, vec![report]))
}

/// Solves one problem (a class pair, or the one-class ball) with the configured solver on
/// `device` (the pair's rows of a shared device): working-set rounds where they apply,
/// sampled iterations, SimpleSVM, or the FW loop.
fn solve_one(
    prob: &Problem<'_>,
    params: &Checked,
    device: &Device,
    obs_refs: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    if params.sample == 0 {
        return crate::solver::entry::solve_on(
            prob,
            device,
            params.cpu,
            &params.solver,
            params.shrink,
            obs_refs,
        );
    }
    let mut be = crate::backend::sampled::Sampled::with_engine(
        params.sampled_config(),
        // Sampled blocks hold their own rows: the whole device, not the pair's view.
        params.device.blocks(prob)?,
    );
    solve_plain(prob, &mut be, &params.solver, obs_refs)
}

#[cfg(test)]
mod cv_tests {
    use super::stratified_folds;

    #[test]
    fn folds_are_stratified_balanced_and_seeded() {
        // 70 of class 1, 30 of class −1, interleaved.
        let labels: Vec<f64> = (0..100)
            .map(|i| if i % 10 < 7 { 1.0 } else { -1.0 })
            .collect();
        let f = stratified_folds(&labels, 4, 3);
        for k in 0..4 {
            let n = f.iter().filter(|&&x| x == k).count();
            let pos = (0..100).filter(|&i| f[i] == k && labels[i] > 0.0).count();
            assert_eq!(n, 25, "fold {k} size");
            assert!((17..=18).contains(&pos), "fold {k}: {pos} positives of 25");
        }
        assert_eq!(f, stratified_folds(&labels, 4, 3));
        assert_ne!(f, stratified_folds(&labels, 4, 4));
    }
}

#[cfg(test)]
mod check_tests {
    use super::{Gamma, TrainParams};
    use crate::error::{Error, ParamError};
    use crate::solver::{Algorithm, SolverParams, StopRule};

    fn err(p: TrainParams) -> ParamError {
        match p.check() {
            Err(Error::InvalidParam(e)) => e,
            other => panic!("expected a parameter error, got {other:?}"),
        }
    }

    #[test]
    fn settings_are_checked_once_into_typed_errors() {
        let ok = TrainParams::default();
        assert_eq!(ok.check().map(|c| c.c).ok(), Some(1.0));
        let with_alg = |algorithm| TrainParams {
            solver: SolverParams {
                algorithm: Some(algorithm),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            err(TrainParams {
                c: 0.0,
                ..Default::default()
            }),
            ParamError::NotPositive {
                name: "C",
                value: 0.0
            }
        );
        assert!(matches!(
            err(TrainParams {
                gamma: Gamma::Value(f64::NAN),
                ..Default::default()
            }),
            ParamError::NotPositive { name: "gamma", .. }
        ));
        assert!(matches!(
            err(TrainParams {
                solver: SolverParams {
                    eps: -1.0,
                    ..Default::default()
                },
                ..Default::default()
            }),
            ParamError::NotPositive { name: "eps", .. }
        ));
        assert_eq!(
            err(TrainParams {
                class_weights: vec![(1.0, 2.0), (-1.0, 0.0)],
                ..Default::default()
            }),
            ParamError::ClassWeight {
                label: -1.0,
                value: 0.0
            }
        );
        assert_eq!(
            err(TrainParams {
                sample_weights: Some(vec![1.0, f64::INFINITY].into()),
                ..Default::default()
            }),
            ParamError::RowWeight {
                name: "sample weights",
                row: 2,
                value: f64::INFINITY
            }
        );
        for alg in [Algorithm::SparseFw, Algorithm::SimpleSvm] {
            let e = err(TrainParams {
                sample: 10,
                ..with_alg(alg)
            });
            assert!(
                matches!(e, ParamError::Unsupported { option: "sampled iterations (sample)", algorithm, .. } if algorithm == alg.name()),
                "{e}"
            );
            let e = err(TrainParams {
                one_class: true,
                ..with_alg(alg)
            });
            assert!(
                matches!(
                    e,
                    ParamError::Unsupported {
                        option: "one-class training",
                        ..
                    }
                ),
                "{e}"
            );
        }
        let mut meb = with_alg(Algorithm::SimpleSvm);
        meb.solver.stop = StopRule::Meb;
        assert!(matches!(
            err(meb),
            ParamError::Unsupported {
                option: "stop = meb",
                ..
            }
        ));
        // The message users read stays what it was.
        assert_eq!(
            Error::from(ParamError::NotPositive {
                name: "C",
                value: -2.0
            })
            .to_string(),
            "invalid parameter: C must be a positive number, got -2"
        );
    }
}
