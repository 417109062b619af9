//! `fwsvm train`.

pub use super::common::BackendArg;
use super::common::{
    DataArgs, ProgressLine, Trace, accuracy, accuracy_line, check_cache_mb, open_device,
    parse_positive, parse_rel, set_threads,
};
use crate::backend::cpu::{CpuConfig, Precision};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::output::RunFiles;
use crate::solver::simple_svm::{LinearSolver, Violator};
use crate::solver::{Algorithm, Observer, SolverParams, StopRule};
use crate::train::{Gamma, KernelKind, PairInfo, TrainParams, train};
use clap::Args;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// `fwsvm train` under mpirun.
#[cfg(feature = "mpi")]
mod distributed;

pub(super) fn parse_gamma(s: &str) -> std::result::Result<Gamma, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Gamma::Auto);
    }
    match s.parse::<f64>() {
        Ok(g) if g > 0.0 && g.is_finite() => Ok(Gamma::Value(g)),
        _ => Err(format!("expected `auto` or a positive number, found `{s}`")),
    }
}

/// Help headings, in the order users reach for them: what to solve, how long, where, and what
/// goes in and out.
pub(super) const PROBLEM: &str = "Problem and kernel";
pub(super) const STOPPING: &str = "Algorithm and stopping";
pub(super) const BACKEND: &str = "Backend";
pub(super) const OUTPUT: &str = "Input and output";

/// Options of `fwsvm train`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct TrainArgs {
    /// Print help (-h is svm-train's shrinking switch here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Training data (LIBSVM format unless --format csv; plain, .gz, .bz2 or .xz).
    train: PathBuf,
    /// Model file to write [default: the training file's name + ".model", in the current directory].
    model: Option<PathBuf>,
    #[command(flatten)]
    opts: TrainOpts,
    /// Compute backend: auto = a hardware GPU when there is one, else the CPU; gpu = any
    /// adapter, software ones included (for tests); cpu.
    #[arg(help_heading = BACKEND, long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// K-fold cross-validation (stratified, seeded by --seed): prints the held-out accuracy as
    /// svm-train -v does and writes no model.
    #[arg(help_heading = OUTPUT, short = 'v', long = "cv", value_name = "K", conflicts_with_all = ["model", "test", "trace"])]
    cv: Option<usize>,
    /// Under mpirun, how -v K (its folds) and one-versus-one (its class pairs) use the ranks:
    /// tasks = each fold or pair trained whole on one rank (every rank holds all rows), rows =
    /// each split over all ranks by rows; auto = tasks when the data fit every rank's share of
    /// memory and there are at least as many folds or pairs as ranks.
    #[arg(help_heading = BACKEND, long, value_enum, default_value = "auto")]
    pub distribute: crate::dist::plan::Distribute,
    /// Test data: predict after training and print the accuracy.
    #[arg(help_heading = OUTPUT, long)]
    test: Option<PathBuf>,
    /// Write a CSV trace (iteration, seconds, f, gap, step kind, step size, active-set size).
    #[arg(help_heading = OUTPUT, long, value_name = "CSV")]
    trace: Option<PathBuf>,
}

/// The training options shared by `fwsvm train`, `fwsvm check` and `fwsvm grid`.
#[derive(Debug, Args)]
pub struct TrainOpts {
    /// svm-train's SVM type: 0 = C-SVC, 2 = one-class (novelty detection: the smallest ball
    /// around the data, rbf kernel, -c sets how many points may fall outside; labels ignored).
    /// 1 nu-SVC, 3 epsilon-SVR and 4 nu-SVR are refused with a message.
    #[arg(help_heading = PROBLEM, short = 's', value_name = "TYPE", default_value_t = 0, value_parser = parse_svm_type)]
    svm_type: u8,
    /// Kernel (svm-train's -t 0..3 = linear, poly, rbf, sigmoid).
    #[arg(
        help_heading = PROBLEM,
        short = 'k',
        short_alias = 't',
        long,
        value_enum,
        default_value = "rbf"
    )]
    kernel: KernelKind,
    /// C: the L2-SVM's regularisation (Q gets δ_ij / C).
    #[arg(help_heading = PROBLEM, short = 'c', long = "cost", default_value = "1", value_parser = parse_positive)]
    cost: f64,
    /// γ for rbf and poly, or `auto` = 1 / mean squared distance over 10,000 seeded random pairs.
    #[arg(help_heading = PROBLEM, short = 'g', long, default_value = "auto", value_parser = parse_gamma)]
    gamma: Gamma,
    /// Degree of the polynomial kernel.
    #[arg(help_heading = PROBLEM, short = 'd', long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    degree: u32,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(help_heading = PROBLEM, short = 'r', long, default_value_t = 0.0, allow_hyphen_values = true)]
    coef0: f64,
    /// Class weight: C of class LABEL is W·C (svm-train's -wLABEL W; repeatable), in every
    /// solver and in each one-versus-one pair.
    #[arg(help_heading = PROBLEM, long, value_name = "LABEL=W", value_parser = parse_class_weight)]
    class_weight: Vec<(f64, f64)>,
    /// Probability estimates (svm-train's -b 1): Platt's sigmoid per class pair, fitted on
    /// decision values of an internal 5-fold cross-validation, written to the model as probA
    /// and probB (ignored with -v).
    #[arg(help_heading = PROBLEM, short = 'b', long, value_name = "0|1", default_value = "0", value_parser = parse_switch,
          action = clap::ArgAction::Set)]
    probability: bool,
    /// svm-train's ν (-n) and ε of epsilon-SVR (-p): read so that they are refused with a
    /// message naming what applies instead.
    #[arg(help_heading = PROBLEM, short = 'n', hide = true, value_parser = refuse_nu)]
    nu: Option<f64>,
    #[arg(help_heading = PROBLEM, short = 'p', hide = true, value_parser = refuse_svr_epsilon)]
    svr_epsilon: Option<f64>,

    /// The solver: a Frank–Wolfe variant, the Core Vector Machine, sparse re-weighted FW, or
    /// SimpleSVM for LIBSVM's C-SVM.
    /// [default: ws; partan with --sample and under mpirun]
    #[arg(help_heading = STOPPING, short = 'a', long, value_enum)]
    algorithm: Option<Algorithm>,
    /// Stop when the duality gap is at most eps.
    #[arg(help_heading = STOPPING, short = 'e', long, default_value = "1e-4", value_parser = parse_positive)]
    eps: f64,
    /// Also require gap <= rel-eps * 2f (`inf` = the papers' absolute rule alone). Guards
    /// large C, where f is tiny and eps is reached far from the optimum. 0.1 for ws: the test
    /// accuracy of the converged model (see docs/METHODS.md); 1 for the others: no training point with
    /// a negative margin. [default: 0.1 for ws, else 1]
    #[arg(help_heading = STOPPING, long, value_parser = parse_rel)]
    rel_eps: Option<f64>,
    /// Stopping rule: the duality gap, or CVM's relative ball rule (rbf only).
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "gap")]
    stop: StopRule,
    /// Stop after this many iterations.
    #[arg(help_heading = STOPPING, long, default_value_t = 10_000_000, value_parser = super::common::parse_count::<u64>)]
    max_iter: u64,
    /// Stop after this many seconds.
    #[arg(help_heading = STOPPING, long, value_parser = parse_positive)]
    time_limit: Option<f64>,
    /// Randomized iterations: draw this many points per iteration instead of keeping the
    /// full gradient (0 = off; the paper uses 194). The gap is then sampled, with two extra
    /// draws before stopping; the certified gap at the end is exact.
    #[arg(help_heading = STOPPING, long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    sample: usize,
    /// Seed for the initial sample and --gamma auto (CPU runs are reproducible bit for bit).
    #[arg(help_heading = STOPPING, long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
    seed: u64,
    /// Random points solved exactly to initialise (0 or 1 = one random vertex).
    #[arg(help_heading = STOPPING, long, default_value_t = 20, value_parser = super::common::parse_count::<usize>)]
    init_size: usize,
    /// The working-set solver's |W|, the kernel columns computed per outer iteration (0 =
    /// automatic: a power of two from 64 to 1024 that grows with the support; see docs/METHODS.md).
    #[arg(help_heading = STOPPING, long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    ws_size: usize,
    /// ws: start cold (20 random points) instead of from a tenth of the points solved first
    /// and extended to all (the default on 20,000 points or more; see docs/METHODS.md).
    #[arg(help_heading = STOPPING, long)]
    no_warm_start: bool,
    /// svm-train's shrinking switch: 0 = --no-shrink, 1 = --shrink (help is --help).
    #[arg(help_heading = STOPPING, short = 'h', value_name = "0|1", value_parser = parse_switch,
          conflicts_with_all = ["no_shrink", "shrink"])]
    shrinking: Option<bool>,
    /// Turn working-set shrinking off (on by default for the FW variants and CVM on 100,000
    /// points or more, for ws on 20,000 or more: iterations run over the points that can still
    /// matter, and an exact pass over all points decides; see docs/METHODS.md).
    #[arg(help_heading = STOPPING, long)]
    no_shrink: bool,
    /// Working-set shrinking whatever the number of points.
    #[arg(help_heading = STOPPING, long, conflicts_with = "no_shrink")]
    shrink: bool,
    /// Skip the exact recomputation of the duality gap at the end.
    #[arg(help_heading = STOPPING, long)]
    no_certify: bool,
    /// Under mpirun, with a training split over the ranks by rows: each rank sums its own
    /// part of αᵀg and the away vertex comes from one max-location reduction (three numbers
    /// per iteration instead of the active set's gradient entries); the same optimum within
    /// the certified gaps, no longer the single-process run to the bit.
    #[arg(help_heading = BACKEND, long)]
    pub partial_sums: bool,
    /// SimpleSVM: the next violator is the largest one (greedy) or comes from SimplerSVM's
    /// priority queue.
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "greedy")]
    violator: Violator,
    /// SimpleSVM: linear solves by Cholesky updates (chol) or conjugate gradients (cg).
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "chol")]
    linear_solver: LinearSolver,
    /// Kernel-column cache in MiB [default: 1024; on a hardware GPU as much as one storage
    /// binding holds (2048 on an H100), at least 1024].
    #[arg(help_heading = BACKEND, short = 'm', long, value_parser = super::common::parse_count::<usize>)]
    cache_mb: Option<usize>,
    /// Worker threads (0 = one per core).
    #[arg(help_heading = BACKEND, long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// GPU adapter: an index or part of a name, as `fwsvm info` lists them (default:
    /// WGPU_ADAPTER_NAME, else the best one).
    #[arg(help_heading = BACKEND, long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// Precision: on the CPU, of the cached kernel columns (the gradient is always f64); on the
    /// GPU, of the gradient (f64 needs an adapter with SHADER_F64). Default: f64 for simplesvm
    /// (its α reach C and its KKT test is absolute; f64 on a GPU only where the adapter has
    /// it), f32 otherwise
    #[arg(help_heading = BACKEND, long, value_enum)]
    precision: Option<Precision>,
    /// Print only errors and the accuracy line.
    #[arg(help_heading = OUTPUT, short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    data: DataArgs,
}

impl TrainOpts {
    /// For the commands that compare or cross-validate classifiers (`check`, `grid`): the
    /// options that only `train` applies are refused, naming the command.
    pub fn refuse_train_only(&self, command: &str) -> Result<()> {
        self.refuse_partial_sums_in_one_process(command)?;
        if self.svm_type == 2 {
            return Err(Error::param(format!(
                "fwsvm {command} works on classifiers; -s 2 (one-class) does not apply"
            )));
        }
        if self.probability {
            return Err(Error::param(format!(
                "fwsvm {command} reports labels and accuracies; -b 1 (probabilities) does not \
                 apply"
            )));
        }
        Ok(())
    }

    /// `-a ws` under mpirun: the working-set solver runs in one process only (its selection
    /// and batched blocks have no distributed form).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn refuse_ws_over_ranks(&self) -> Result<()> {
        if self.algorithm == Some(Algorithm::Ws) {
            return Err(Error::param(
                "-a ws runs in one process; under mpirun choose another algorithm (partan, the \
                 default there, swap2, cvm, …)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// `--partial-sums` changes how ranks combine their sums: in one process it does not
    /// apply (the distributed commands call this before they know they are distributed
    /// only in one process).
    pub fn refuse_partial_sums_in_one_process(&self, command: &str) -> Result<()> {
        if self.partial_sums && !launched_by_mpirun() {
            return Err(Error::param(format!(
                "--partial-sums combines the sums of ranks started by mpirun; fwsvm {command} \
                 runs in one process here"
            )));
        }
        Ok(())
    }

    /// The solver: `-a`, or ws — but partan, the papers' method, for randomized iterations
    /// (`--sample`: ws chooses from the whole gradient) and under mpirun (where ws does not
    /// run).
    pub fn algorithm(&self) -> Algorithm {
        match self.algorithm {
            Some(a) => a,
            None if self.sample > 0 || launched_by_mpirun() => Algorithm::Partan,
            None => Algorithm::Ws,
        }
    }

    /// `--rel-eps`, or the algorithm's default ([`Algorithm::default_rel_eps`]).
    pub fn rel_eps(&self) -> f64 {
        self.rel_eps
            .unwrap_or_else(|| self.algorithm().default_rel_eps())
    }

    /// `--precision`, or the algorithm's default.
    pub fn precision(&self) -> Precision {
        self.precision
            .unwrap_or_else(|| self.algorithm().default_precision())
    }

    /// Kernel-cache bytes on the CPU.
    pub fn cache_bytes(&self) -> usize {
        self.cache_mb.unwrap_or(CACHE_MB).saturating_mul(1 << 20)
    }

    /// Kernel-cache bytes on a GPU: None = the adapter's default.
    pub fn gpu_cache_bytes(&self) -> Option<usize> {
        self.cache_mb.map(|mb| mb.saturating_mul(1 << 20))
    }

    /// Opens the device `backend` names with these options (`--device`, `--precision`).
    pub fn open_device(&self, backend: BackendArg) -> Result<crate::backend::Device> {
        open_device(
            backend,
            self.device.as_deref(),
            self.precision(),
            self.precision.is_some(),
            self.gpu_cache_bytes(),
            self.quiet,
        )
    }

    /// [`open_device`](Self::open_device) for training on `ds`: with `--backend auto` (and no
    /// `--device`), data too small for a GPU to pay stay on the CPU without probing adapters,
    /// and the first line says so.
    pub fn open_device_for(
        &self,
        backend: BackendArg,
        ds: &Dataset,
    ) -> Result<crate::backend::Device> {
        super::common::device_request(
            backend,
            self.device.as_deref(),
            self.precision(),
            self.precision.is_some(),
            self.gpu_cache_bytes(),
        )
        .open_for(ds, &mut |s| {
            if !self.quiet {
                eprintln!("fwsvm: {s}");
            }
        })
    }

    /// The library's training settings on `device`.
    pub fn params(&self, device: crate::backend::Device) -> TrainParams {
        TrainParams {
            kernel: self.kernel,
            gamma: self.gamma,
            coef0: self.coef0,
            degree: self.degree,
            c: self.cost,
            class_weights: self.class_weight.clone(),
            sample_weights: None,
            one_class: self.svm_type == 2,
            solver: SolverParams {
                algorithm: self.algorithm(),
                eps: self.eps,
                rel_eps: self.rel_eps(),
                max_iter: self.max_iter,
                time_limit: self.time_limit.map(Duration::from_secs_f64),
                seed: self.seed,
                init_size: self.init_size,
                ws_size: self.ws_size,
                warm_start: !self.no_warm_start,
                certify: !self.no_certify,
                stop: self.stop,
                simple: crate::solver::simple_svm::SimpleParams {
                    violator: self.violator,
                    solver: self.linear_solver,
                },
            },
            cpu: CpuConfig {
                cache_bytes: self.cache_bytes(),
                precision: self.precision(),
            },
            device,
            sample: self.sample,
            partial_sums: self.partial_sums,
            shrink: (!self.no_shrink && self.shrinking != Some(false)).then(|| {
                crate::solver::shrink::ShrinkParams {
                    min_points: if self.shrink || self.shrinking == Some(true) {
                        0
                    } else {
                        crate::solver::shrink::SHRINK_MIN_POINTS
                    },
                    ..Default::default()
                }
            }),
        }
    }

    /// Reads the training file and the `--test` file; returns them with the seconds the
    /// training file took.
    pub fn read(
        &self,
        train: &std::path::Path,
        test: Option<&std::path::Path>,
    ) -> Result<(Dataset, Option<Dataset>, f64)> {
        set_threads(self.threads, self.quiet);
        check_cache_mb(self.cache_mb.unwrap_or(CACHE_MB))?;
        let t0 = Instant::now();
        let ds = self.data.read(train, self.quiet)?;
        let read_s = t0.elapsed().as_secs_f64();
        if self.sample > ds.len() {
            return Err(Error::param(format!(
                "--sample {}: more than the {} rows of {}; draw at most that many (the paper \
                 uses 194), or 0 for the full gradient",
                self.sample,
                ds.len(),
                train.display()
            )));
        }
        let test = match test {
            Some(p) => Some(self.data.read(p, self.quiet)?),
            None => None,
        };
        Ok((ds, test, read_s))
    }

    /// This rank's device in an MPI job: the CPU for `--backend cpu`; for `--backend gpu`
    /// the local rank's share of the adapters that can run the job (modulo their number, so
    /// ranks share one GPU) unless `--device` names one; `--backend auto` as in one process
    /// (a hardware GPU where the rank's rows pay for it). An error on any rank ends every rank;
    /// each rank says which adapter it took.
    #[cfg(feature = "mpi")]
    pub fn open_rank_device(
        &self,
        backend: BackendArg,
        comm: &dyn crate::dist::comm::Comm,
        local: &Dataset,
    ) -> Result<crate::backend::Device> {
        let rank = comm.rank();
        let device = match backend {
            BackendArg::Cpu => Ok(crate::backend::Device::Cpu),
            backend => {
                // --backend gpu: the local rank's share of the adapters that can run the job
                // by default. --backend auto keeps its own choice (a hardware GPU where the rows
                // pay for one, never a software adapter).
                let mut req = super::common::device_request(
                    backend,
                    self.device.as_deref(),
                    self.precision(),
                    self.precision.is_some(),
                    self.gpu_cache_bytes(),
                );
                if backend == BackendArg::Gpu {
                    req.local_rank = crate::dist::local_rank();
                }
                req.open_for(local, &mut |s| {
                    // The choice's note once (rank 0's); every rank names a GPU it took below.
                    if !self.quiet && rank == 0 {
                        rank_line(rank, s);
                    }
                })
            }
        };
        let device = crate::dist::comm::agree(comm, device)?;
        if !self.quiet && device.is_gpu() {
            rank_line(rank, &device.describe());
        }
        Ok(device)
    }

    /// Sets the worker threads (`-j`); `quiet` silences the note about them.
    #[cfg(feature = "mpi")]
    pub fn apply_threads(&self, quiet: bool) {
        set_threads(self.threads, quiet);
    }

    /// `--seed`.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `-q`.
    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Labels that look like a regression target rather than classes: more than
/// [`MAX_FRACTIONAL_CLASSES`] distinct values, some of them not whole numbers. fwsvm trains
/// classifiers; 60 such values would be 1,770 one-versus-one pairs.
const MAX_FRACTIONAL_CLASSES: usize = 10;

/// `-m`'s default on the CPU (MiB).
const CACHE_MB: usize = 1024;

/// Above this many classes a note says how many one-versus-one pairs will be trained.
const MANY_CLASSES: usize = 20;

/// The class labels of a training set, checked: at least two classes, and labels that look
/// like classes rather than a continuous target.
pub fn require_two_classes(ds: &Dataset, path: &std::path::Path) -> Result<Vec<f64>> {
    let classes = crate::train::class_order(ds);
    if classes.len() < 2 {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: format!(
                "all {} rows have the same label ({}); training needs at least two classes",
                ds.len(),
                classes.first().copied().unwrap_or(f64::NAN)
            ),
        });
    }
    if classes.len() > MAX_FRACTIONAL_CLASSES
        && let Some(&frac) = classes.iter().find(|c| c.fract() != 0.0)
    {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: format!(
                "the labels look continuous ({} distinct values, e.g. {frac}): fwsvm trains \
                 classifiers and would train {} one-versus-one pairs; give class labels \
                 (regression is not supported)",
                classes.len(),
                classes.len() * (classes.len() - 1) / 2
            ),
        });
    }
    Ok(classes)
}

/// A note for many classes (how many one-versus-one pairs they make).
pub(super) fn many_classes_note(classes: usize) -> Option<String> {
    (classes > MANY_CLASSES).then(|| {
        format!(
            "fwsvm: note: {classes} classes: {} one-versus-one pairs will be trained",
            classes * (classes - 1) / 2
        )
    })
}

/// Warnings about data the kernel will see badly: features on very different scales, or an
/// RBF γ that makes the kernel nearly constant (every point alike) or nearly diagonal (no
/// two points alike). Each names the fix.
pub(super) fn kernel_warnings(
    ds: &Dataset,
    kernel: &crate::kernel::Kernel,
    path: &std::path::Path,
    seed: u64,
    gamma_auto: bool,
) -> Vec<String> {
    use crate::kernel::Kernel;
    let mut out = Vec::new();
    let Some(gamma) = kernel.gamma() else {
        return out;
    };
    let name = path.display();
    if let Ok(ranges) = crate::data::scale::ScaleParams::fit(ds, -1.0, 1.0)
        && let Some(s) = ranges.spread()
        && s.is_uneven()
    {
        out.push(format!(
            "fwsvm: warning: the features of {name} are on very different scales (feature {} \
             spans {}, the median feature {}): the kernel sees little but the widest \
             features; scale them first: `fwsvm scale -s ranges.txt {name} train.scaled` \
             (and `fwsvm scale -r ranges.txt TEST test.scaled` for test data)",
            s.feature,
            crate::util::fmt_g(s.widest, 4),
            crate::util::fmt_g(s.median, 4)
        ));
    }
    // γ times the mean squared distance between points is exactly 1 for γ auto (the same
    // seeded pairs): only a γ the user gave is measured.
    if matches!(kernel, Kernel::Rbf { .. }) && !gamma_auto && ds.len() >= 2 {
        let spread = gamma / crate::kernel::gamma_heuristic(ds, crate::train::GAMMA_PAIRS, seed);
        let shape = if spread < 1e-3 {
            Some("nearly constant (all points look alike)")
        } else if spread > 1e3 {
            Some("nearly diagonal (no two points look alike; all become support vectors)")
        } else {
            None
        };
        if let Some(shape) = shape {
            out.push(format!(
                "fwsvm: warning: gamma = {} times the mean squared distance between rows \
                 is {}: the kernel is {shape}; try -g auto, or `fwsvm grid`",
                crate::util::fmt_exact(gamma),
                crate::util::fmt_g(spread, 3)
            ));
        }
    }
    out
}

/// `fwsvm train --cv K`: the held-out accuracy, one progress line per fold.
fn cross_validation(
    ds: &Dataset,
    params: &TrainParams,
    k: usize,
    seed: u64,
    quiet: bool,
) -> Result<()> {
    let t0 = Instant::now();
    let mut obs = |fold: usize, info: &PairInfo| -> Vec<Box<dyn Observer>> {
        let prefix = if info.count > 1 {
            format!(
                "fold {}/{k}, pair {}/{}",
                fold + 1,
                info.index + 1,
                info.count
            )
        } else {
            format!("fold {}/{k}", fold + 1)
        };
        match ProgressLine::new(prefix, quiet) {
            Some(p) => vec![Box::new(p) as Box<dyn Observer>],
            None => Vec::new(),
        }
    };
    let r = crate::train::cross_validate(ds, params, k, seed, &mut obs)?;
    if !quiet {
        for (f, (n, correct, reports)) in r.folds.iter().enumerate() {
            let iters: u64 = reports.iter().map(|p| p.result.iterations).sum();
            let svs: usize = reports.iter().map(|p| p.result.alpha.len()).sum();
            let secs: f64 = reports.iter().map(|p| p.result.seconds).sum();
            eprintln!(
                "fwsvm: fold {}/{k}: {} held out, {:.2} % correct; iterations {iters}, SVs {svs}, {secs:.2}s",
                f + 1,
                n,
                100.0 * *correct as f64 / (*n).max(1) as f64
            );
        }
        eprintln!(
            "fwsvm: {k}-fold cross-validation in {:.2}s (no model written)",
            t0.elapsed().as_secs_f64()
        );
    }
    println!(
        "Cross Validation Accuracy = {}%",
        crate::util::fmt_g(r.accuracy(), 6)
    );
    Ok(())
}

/// Runs `fwsvm train`.
pub fn run(args: TrainArgs) -> Result<()> {
    #[cfg(feature = "mpi")]
    if launched_by_mpirun() {
        args.opts.refuse_ws_over_ranks()?;
        return distributed::run_distributed(args);
    }
    refuse_mpirun_without_mpi("train")?;
    let a = &args.opts;
    a.refuse_partial_sums_in_one_process("train")?;
    let model_path = args
        .model
        .clone()
        .unwrap_or_else(|| default_model_path(&args.train));
    let mut files = RunFiles::new();
    files
        .input("training data", &args.train)
        .input_opt("test data", args.test.as_deref())
        .output_opt("trace", args.trace.as_deref());
    if args.cv.is_none() {
        files.output("model file", &model_path);
    }
    files.check()?;
    let (ds, test, read_s) = a.read(&args.train, args.test.as_deref())?;
    if crate::interrupt::requested() {
        return Err(Error::Interrupted(
            "before training started; nothing written".into(),
        ));
    }
    let params = a.params(a.open_device_for(args.backend, &ds)?);
    refuse_what_does_not_apply(&args, &params)?;
    // One-class training ignores the labels: any number of classes will do.
    let classes = if params.one_class {
        crate::train::class_order(&ds)
    } else {
        require_two_classes(&ds, &args.train)?
    };
    let kernel = params.resolve_kernel(&ds)?;
    announce(&args, &ds, &params, &kernel, &classes, read_s);
    if let Some(k) = args.cv {
        return cross_validation(&ds, &params, k, a.seed, a.quiet);
    }
    let multiclass = classes.len() > 2 && !params.one_class;
    let trace = match &args.trace {
        Some(p) => Some(Rc::new(RefCell::new(Trace::create(p, multiclass)?))),
        None => None,
    };
    let params = params.with_gamma_of(&kernel);
    let (mut model, reports) = train(&ds, &params, &mut observers(trace.clone(), a.quiet))?;
    if let Some(t) = &trace {
        t.borrow_mut().finish()?;
    }
    if !a.quiet {
        warn_negative_margins(a.algorithm(), &reports);
    }
    if a.probability {
        let t = Instant::now();
        crate::train::add_probabilities(&ds, &params, &mut model)?;
        if !a.quiet {
            eprintln!(
                "fwsvm: probability estimates: Platt's sigmoid for each class pair from {}-fold \
                 cross-validated decision values ({:.2}s)",
                crate::train::PROBABILITY_FOLDS,
                t.elapsed().as_secs_f64()
            );
        }
    }
    model.save(&model_path)?;
    if !a.quiet {
        summarize(a.algorithm(), &model, &reports, multiclass);
        eprintln!("fwsvm: model written to {}", model_path.display());
    }
    if let (Some(test), Some(path)) = (&test, &args.test) {
        score_test(&params, &model, test, path, a.quiet)?;
    }
    Ok(())
}

/// An error for a build without MPI started by `mpirun -np P` (P > 1): otherwise each of the
/// P processes would run the whole job on its own and write the same files.
pub(super) fn refuse_mpirun_without_mpi(command: &str) -> Result<()> {
    if cfg!(feature = "mpi") || !launched_by_mpirun() {
        return Ok(());
    }
    Err(Error::param(format!(
        "started by mpirun with several ranks, but this fwsvm was built without MPI: build it \
         with `cargo build --release --features mpi` to run `fwsvm {command}` across ranks"
    )))
}

/// True when this process is one of several an MPI launcher started (`mpirun -np P` with
/// P > 1: Open MPI's or MPICH's environment says so).
pub(super) fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().any(|v| {
        std::env::var(v)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .is_some_and(|n| n > 1)
    })
}

/// "fwsvm: rank R: …" on standard error in one write (ranks sharing a terminal do not
/// interleave it).
#[cfg(feature = "mpi")]
fn rank_line(rank: usize, s: &str) {
    use std::io::Write as _;
    let line = format!("fwsvm: rank {rank}: {s}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// svm-train's default model name: the training file's name + ".model", in the current
/// directory.
fn default_model_path(train: &std::path::Path) -> PathBuf {
    let name = train
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "train".into());
    PathBuf::from(format!("{name}.model"))
}

/// Options that do not apply together are refused by name.
fn refuse_what_does_not_apply(args: &TrainArgs, params: &TrainParams) -> Result<()> {
    let a = &args.opts;
    if params.one_class {
        let clash = [
            (args.cv.is_some(), "-v (cross-validation)"),
            (a.probability, "-b 1 (probabilities)"),
            (!a.class_weight.is_empty(), "-w (class weights)"),
        ];
        if let Some((_, what)) = clash.iter().find(|(on, _)| *on) {
            return Err(Error::param(format!(
                "-s 2 (one-class) does not take {what}"
            )));
        }
    }
    if args.cv.is_some() && a.probability {
        return Err(Error::param(
            "-v reports the cross-validated accuracy; -b 1 (probabilities) does not apply to it"
                .into(),
        ));
    }
    Ok(())
}

/// The warnings on the data and kernel, then the run's first line (unless quiet).
fn announce(
    args: &TrainArgs,
    ds: &Dataset,
    params: &TrainParams,
    kernel: &crate::kernel::Kernel,
    classes: &[f64],
    read_s: f64,
) {
    let a = &args.opts;
    let algorithm = a.algorithm();
    for &(label, _) in &a.class_weight {
        if !classes.contains(&label) && !a.quiet {
            // As svm-train: the weight is ignored, with a warning.
            eprintln!(
                "fwsvm: warning: class {label} of --class-weight/-w{label} is not in {}; \
                 ignored",
                args.train.display()
            );
        }
    }
    if !a.quiet {
        let notes = kernel_warnings(
            ds,
            kernel,
            &args.train,
            a.seed,
            matches!(a.gamma, Gamma::Auto),
        );
        let many = if params.one_class {
            None
        } else {
            many_classes_note(classes.len())
        };
        for w in notes.iter().chain(&many) {
            eprintln!("{w}");
        }
        eprintln!(
            "fwsvm: {} rows, {} features ({}), {}; {} with {}, C = {}; read in {:.2}s; {}",
            ds.len(),
            ds.n_features(),
            if ds.is_dense() { "dense" } else { "sparse" },
            if params.one_class {
                "one-class (labels ignored)".to_string()
            } else {
                format!("{} classes", classes.len())
            },
            algorithm,
            describe_kernel(kernel),
            a.cost,
            read_s,
            if params.sample > 0 {
                format!(
                    "sampled iterations, |S| = {} (kernel blocks on the {})",
                    params.sample,
                    params.device.describe()
                )
            } else {
                params.device.describe()
            }
        );
    }
}

/// The observers of each class pair: a progress line (unless quiet) and the trace.
fn observers(
    trace: Option<Rc<RefCell<Trace>>>,
    quiet: bool,
) -> impl FnMut(&PairInfo) -> Vec<Box<dyn Observer>> {
    move |info: &PairInfo| -> Vec<Box<dyn Observer>> {
        let mut v: Vec<Box<dyn Observer>> = Vec::new();
        let prefix = if info.count > 1 {
            format!(
                "pair {}/{} ({} vs {})",
                info.index + 1,
                info.count,
                info.classes.0,
                info.classes.1
            )
        } else {
            "training".to_string()
        };
        if let Some(p) = ProgressLine::new(prefix, quiet) {
            v.push(Box::new(p));
        }
        if let Some(t) = &trace {
            t.borrow_mut().set_pair(info.index);
            v.push(Box::new(SharedTrace(t.clone())));
        }
        v
    }
}

/// An L2-SVM stopped with a gap above 2f still has a point of negative margin: say so.
fn warn_negative_margins(algorithm: Algorithm, reports: &[crate::train::PairReport]) {
    for r in reports {
        let (f, gap) = (
            r.result.certified_f.unwrap_or(r.result.f),
            r.result.certified_gap.unwrap_or(r.result.gap),
        );
        if algorithm.is_l2svm() && gap > 2.0 * f {
            eprintln!(
                "fwsvm: warning: {}the duality gap ({gap:.3e}) exceeds 2f = αᵀQα ({:.3e}): some \
                 point's margin is still negative and the model may be far from optimal \
                 (stopped by {}); see --rel-eps and -e/--eps",
                if reports.len() > 1 {
                    format!("pair {} vs {}: ", r.classes.0, r.classes.1)
                } else {
                    String::new()
                },
                2.0 * f,
                r.result.stop
            );
        }
    }
}

/// The per-pair lines (several classes) and the run's summary, working-set rounds and device
/// traffic.
fn summarize(
    algorithm: Algorithm,
    model: &crate::model::Model,
    reports: &[crate::train::PairReport],
    multiclass: bool,
) {
    if multiclass {
        for r in reports {
            eprintln!(
                "  pair {} vs {}: m {}, iterations {}, SVs {}, certified gap {}, {:.2}s, {}",
                r.classes.0,
                r.classes.1,
                r.m,
                r.result.iterations,
                r.result.alpha.len(),
                r.result
                    .certified_gap
                    .map(|g| format!("{g:.3e}"))
                    .unwrap_or("-".into()),
                r.result.seconds,
                r.result.stop
            );
        }
    }
    let iters: u64 = reports.iter().map(|r| r.result.iterations).sum();
    let secs: f64 = reports.iter().map(|r| r.result.seconds).sum();
    let cert_secs: f64 = reports.iter().map(|r| r.result.certify_seconds).sum();
    let gap = reports
        .iter()
        .filter_map(|r| r.result.certified_gap)
        .fold(None::<f64>, |m, g| Some(m.map_or(g, |m| m.max(g))));
    let obj: f64 = reports
        .iter()
        .map(|r| r.result.certified_f.unwrap_or(r.result.f))
        .sum();
    let stop = reports
        .iter()
        .map(|r| r.result.stop)
        .find(|s| *s != crate::solver::StopReason::Converged)
        .unwrap_or(crate::solver::StopReason::Converged);
    let cache = reports.iter().fold((0, 0), |(c, h), r| {
        (
            c + r.result.stats.columns_computed,
            h + r.result.stats.cache_hits,
        )
    });
    eprintln!(
        "fwsvm: {algorithm}: iterations {iters}, SVs {}, {} {}, objective {:.9}, {:.2}s (+{:.2}s certify), stop: {stop}; columns computed {}, cache hits {}",
        model.total_sv(),
        if algorithm.is_l2svm() {
            "certified gap"
        } else {
            "certified KKT violation"
        },
        gap.map(|g| format!("{g:.3e}"))
            .unwrap_or_else(|| "not computed".into()),
        obj,
        secs,
        cert_secs,
        cache.0,
        cache.1
    );
    for r in reports {
        if let Some(w) = &r.result.warm {
            eprintln!(
                "fwsvm: warm start: {} points solved first ({} iterations), extended to {} \
                 starting support vectors ({:.2}s)",
                w.points, w.iterations, w.support, w.seconds
            );
        }
        if let Some(w) = &r.result.shrink {
            eprintln!("fwsvm: {}", describe_shrink(w));
        }
    }
    let mut traffic = crate::backend::BackendStats::default();
    for r in reports {
        traffic.add(&r.result.stats);
    }
    if traffic.has_device_traffic() {
        eprintln!(
            "fwsvm: device traffic {} ({} round trips, {} submits, {} dispatches, {} bytes \
             up, {} bytes down in all); {:.2}s in round trips",
            traffic.per_iteration(iters),
            traffic.round_trips,
            traffic.submits,
            traffic.dispatches,
            traffic.bytes_up,
            traffic.bytes_down,
            traffic.wait_ns as f64 * 1e-9
        );
    }
    if let Some(line) = traffic.call_times() {
        eprintln!("fwsvm: {line}");
    }
}

/// Predicts the test data and prints svm-predict's accuracy line.
fn score_test(
    params: &TrainParams,
    model: &crate::model::Model,
    test: &Dataset,
    path: &std::path::Path,
    quiet: bool,
) -> Result<()> {
    if test.n_features() > model.n_features() && !quiet {
        eprintln!(
            "fwsvm: warning: {} has features beyond index {} that no support vector uses",
            path.display(),
            model.n_features()
        );
    }
    let (pred, _) = crate::predict::on_device(
        &params.device,
        model,
        test,
        crate::backend::GPU_PREDICT_MIN_WORK,
        None,
    )?;
    let (ok, n) = accuracy(&pred, &test.labels);
    println!("{}", accuracy_line(ok, n));
    Ok(())
}

struct SharedTrace(Rc<RefCell<Trace>>);

impl Observer for SharedTrace {
    fn observe(&mut self, p: &crate::solver::Progress) {
        self.0.borrow_mut().observe(p);
    }
}

/// One line on the working-set rounds of a run.
pub(super) fn describe_shrink(w: &crate::solver::shrink::ShrinkStats) -> String {
    let pct = |n: usize| 100.0 * n as f64 / w.m.max(1) as f64;
    format!(
        "working set of {} points: {} at the start, {} at the smallest, {} at the end \
         ({:.1} %); {} shrink{}, {} rebuild{} of the set-aside gradients ({:.2}s)",
        w.m,
        w.first_size,
        w.smallest,
        w.last_size,
        pct(w.last_size),
        w.shrinks,
        if w.shrinks == 1 { "" } else { "s" },
        w.rebuilds,
        if w.rebuilds == 1 { "" } else { "s" },
        w.rebuild_seconds
    )
}

fn describe_kernel(k: &crate::kernel::Kernel) -> String {
    match k {
        crate::kernel::Kernel::Linear => "linear kernel".into(),
        crate::kernel::Kernel::Rbf { gamma } => {
            format!("rbf kernel, gamma = {}", crate::util::fmt_exact(*gamma))
        }
        crate::kernel::Kernel::Poly {
            gamma,
            coef0,
            degree,
        } => format!(
            "poly kernel, gamma = {}, coef0 = {coef0}, degree = {degree}",
            crate::util::fmt_exact(*gamma)
        ),
        crate::kernel::Kernel::Sigmoid { gamma, coef0 } => format!(
            "sigmoid kernel, gamma = {}, coef0 = {coef0}",
            crate::util::fmt_exact(*gamma)
        ),
    }
}

/// svm-train's 0|1 switches (`-h`).
fn parse_switch(s: &str) -> std::result::Result<bool, String> {
    match s {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("expected 0 or 1, found `{s}`")),
    }
}

/// svm-train's `-s`: 0 (C-SVC) is trained; the others are named and refused.
fn parse_svm_type(s: &str) -> std::result::Result<u8, String> {
    match s {
        "0" => Ok(0),
        "1" => Err("-s 1 (nu-SVC) is not supported: fwsvm trains C-SVC (-s 0)".into()),
        "2" => Ok(2),
        "3" | "4" => Err(format!(
            "-s {s} ({}) is not supported: fwsvm trains classifiers, C-SVC (-s 0)",
            if s == "3" { "epsilon-SVR" } else { "nu-SVR" }
        )),
        _ => Err(format!(
            "expected an SVM type 0–4 as svm-train's -s, found `{s}`"
        )),
    }
}

/// svm-train's and svm-predict's 0|1 switches (`-h`, `-b`).
pub(super) fn parse_01(s: &str) -> std::result::Result<bool, String> {
    parse_switch(s)
}

/// `--class-weight LABEL=W` (svm-train's `-wLABEL W`).
fn parse_class_weight(s: &str) -> std::result::Result<(f64, f64), String> {
    let (l, w) = s
        .split_once('=')
        .ok_or_else(|| format!("expected LABEL=WEIGHT, found `{s}`"))?;
    let label: f64 = l
        .trim()
        .parse()
        .map_err(|_| format!("`{l}` is not a class label"))?;
    let weight: f64 = w
        .trim()
        .parse()
        .map_err(|_| format!("`{w}` is not a weight"))?;
    if !(weight > 0.0 && weight.is_finite()) {
        return Err(format!(
            "the weight of class {l} must be a positive number, found `{w}`"
        ));
    }
    Ok((label, weight))
}

/// svm-train's `-n`: ν has no place in fwsvm's models.
fn refuse_nu(_: &str) -> std::result::Result<f64, String> {
    Err(
        "-n (ν) is not a parameter of fwsvm: one-class (-s 2) is set by C (-c), and nu-SVC \
         (-s 1) is not supported"
            .into(),
    )
}

/// svm-train's `-p`: the ε of epsilon-SVR.
fn refuse_svr_epsilon(_: &str) -> std::result::Result<f64, String> {
    Err("-p is epsilon-SVR's ε: fwsvm trains classifiers (-s 0) and one-class models (-s 2)".into())
}
