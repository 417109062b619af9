//! The options `fwsvm train`, `fwsvm check` and `fwsvm grid` share ([`TrainOpts`]), turned into
//! the library's checked parameters, and the parsers of svm-train's own spellings.

use super::*;
use crate::common::{PROBLEM, STOPPING};

/// The training options shared by `fwsvm train`, `fwsvm check` and `fwsvm grid`.
#[derive(Debug, Args)]
pub struct TrainOpts {
    /// svm-train's SVM type: 0 = C-SVC, 2 = one-class (novelty detection: the smallest ball
    /// around the data, rbf kernel, -c sets how many points may fall outside; labels ignored).
    /// 1 nu-SVC, 3 epsilon-SVR and 4 nu-SVR are refused with a message.
    #[arg(help_heading = PROBLEM, short = 's', value_name = "TYPE", default_value_t = 0, value_parser = parse_svm_type)]
    pub(crate) svm_type: u8,
    /// Kernel (svm-train's -t 0..3 = linear, poly, rbf, sigmoid).
    #[arg(
        help_heading = PROBLEM,
        short = 'k',
        short_alias = 't',
        long,
        value_enum,
        default_value = "rbf"
    )]
    pub(crate) kernel: KernelKind,
    /// C: the L2-SVM's regularisation (Q gets δ_ij / C).
    #[arg(help_heading = PROBLEM, short = 'c', long = "cost", default_value = "1", value_parser = parse_positive)]
    pub(crate) cost: f64,
    /// γ for rbf and poly, or `auto` = 1 / mean squared distance over 10,000 seeded random pairs.
    #[arg(help_heading = PROBLEM, short = 'g', long, default_value = "auto", value_parser = parse_gamma)]
    pub(crate) gamma: Gamma,
    /// Degree of the polynomial kernel.
    #[arg(help_heading = PROBLEM, short = 'd', long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) degree: u32,
    /// coef0 of the polynomial and sigmoid kernels.
    #[arg(help_heading = PROBLEM, short = 'r', long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub(crate) coef0: f64,
    /// Class weight: C of class LABEL is W·C (svm-train's -wLABEL W; repeatable), in every
    /// solver and in each one-versus-one pair.
    #[arg(help_heading = PROBLEM, long, value_name = "LABEL=W", value_parser = parse_class_weight)]
    pub(crate) class_weight: Vec<(f64, f64)>,
    /// Probability estimates (svm-train's -b 1): Platt's sigmoid per class pair, fitted on
    /// decision values of an internal 5-fold cross-validation, written to the model as probA
    /// and probB (ignored with -v).
    #[arg(help_heading = PROBLEM, short = 'b', long, value_name = "0|1", default_value = "0", value_parser = parse_switch,
          action = clap::ArgAction::Set)]
    pub(crate) probability: bool,
    /// svm-train's ν (-n) and ε of epsilon-SVR (-p): read so that they are refused with a
    /// message naming what applies instead.
    #[arg(help_heading = PROBLEM, short = 'n', hide = true, value_parser = refuse_nu)]
    pub(crate) nu: Option<f64>,
    #[arg(help_heading = PROBLEM, short = 'p', hide = true, value_parser = refuse_svr_epsilon)]
    pub(crate) svr_epsilon: Option<f64>,

    /// The solver: a Frank–Wolfe variant, the Core Vector Machine, sparse re-weighted FW, or
    /// SimpleSVM for LIBSVM's C-SVM.
    /// [default: ws; partan with --sample]
    #[arg(help_heading = STOPPING, short = 'a', long, value_enum)]
    pub(crate) algorithm: Option<Algorithm>,
    /// Stop when the duality gap is at most eps.
    #[arg(help_heading = STOPPING, short = 'e', long, default_value = "1e-4", value_parser = parse_positive)]
    pub(crate) eps: f64,
    /// Also require gap <= rel-eps * 2f (`inf` = the papers' absolute rule alone). Guards
    /// large C, where f is tiny and eps is reached far from the optimum. 0.1 for ws: the test
    /// accuracy of the converged model (see docs/METHODS.md); 1 for the others: no training point with
    /// a negative margin. [default: 0.1 for ws, else 1]
    #[arg(help_heading = STOPPING, long, value_parser = parse_rel)]
    pub(crate) rel_eps: Option<f64>,
    /// Stopping rule: the duality gap, or CVM's relative ball rule (rbf only).
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "gap")]
    pub(crate) stop: StopRule,
    /// Stop after this many iterations.
    #[arg(help_heading = STOPPING, long, default_value_t = 10_000_000, value_parser = crate::common::parse_count::<u64>)]
    pub(crate) max_iter: u64,
    /// Stop after this many seconds.
    #[arg(help_heading = STOPPING, long, value_parser = parse_positive)]
    pub(crate) time_limit: Option<f64>,
    /// Randomized iterations: draw this many points per iteration instead of keeping the
    /// full gradient (0 = off; the paper uses 194). The gap is then sampled, with two extra
    /// draws before stopping; the certified gap at the end is exact.
    #[arg(help_heading = STOPPING, long, default_value_t = 0, value_parser = crate::common::parse_count::<usize>)]
    pub(crate) sample: usize,
    /// Seed for the initial sample and --gamma auto (CPU runs are reproducible bit for bit).
    #[arg(help_heading = STOPPING, long, default_value_t = 1, value_parser = crate::common::parse_count::<u64>)]
    pub(crate) seed: u64,
    /// Random points solved exactly to initialise (0 or 1 = one random vertex).
    #[arg(help_heading = STOPPING, long, default_value_t = 20, value_parser = crate::common::parse_count::<usize>)]
    pub(crate) init_size: usize,
    /// The working-set solver's |W|, the kernel columns computed per outer iteration (0 =
    /// automatic: the power of two at or above m/512, from 64 — 256 on a hardware GPU — to 1024;
    /// 32 on the CPU while two thirds of the points or more are support vectors; see
    /// docs/METHODS.md).
    #[arg(help_heading = STOPPING, long, default_value_t = 0, value_parser = crate::common::parse_count::<usize>)]
    pub(crate) ws_size: usize,
    /// ws: start cold (20 random points) instead of from a tenth of the points solved first
    /// and extended to all — a ladder of halves where that tenth is mostly support vectors
    /// (the default on 20,000 points or more; see docs/METHODS.md).
    #[arg(help_heading = STOPPING, long)]
    pub(crate) no_warm_start: bool,
    /// svm-train's shrinking switch: 0 = --no-shrink, 1 = --shrink (help is --help).
    #[arg(help_heading = STOPPING, short = 'h', value_name = "0|1", value_parser = parse_switch,
          conflicts_with_all = ["no_shrink", "shrink"])]
    pub(crate) shrinking: Option<bool>,
    /// Turn working-set shrinking off (on by default for the FW variants and CVM on 100,000
    /// points or more, for ws on 20,000 or more: iterations run over the points that can still
    /// matter, and an exact pass over all points decides; see docs/METHODS.md).
    #[arg(help_heading = STOPPING, long)]
    pub(crate) no_shrink: bool,
    /// Working-set shrinking whatever the number of points.
    #[arg(help_heading = STOPPING, long, conflicts_with = "no_shrink")]
    pub(crate) shrink: bool,
    /// Skip the exact recomputation of the duality gap at the end.
    #[arg(help_heading = STOPPING, long)]
    pub(crate) no_certify: bool,
    /// Repeated points (equal features and label): merge each group into one point whose C
    /// is the sum of theirs — the same optimum and decision function over fewer points, one
    /// support vector per group (see docs/METHODS.md) — or keep them apart. [default: merge
    /// for ws, keep for the papers' per-iteration variants]
    #[arg(help_heading = STOPPING, long, value_enum)]
    pub(crate) duplicates: Option<Duplicates>,
    /// Under mpirun, with a training split over the ranks by rows: each rank sums its own
    /// part of αᵀg and the away vertex comes from one max-location reduction (three numbers
    /// per iteration instead of the active set's gradient entries); the same optimum within
    /// the certified gaps, no longer the single-process run to the bit.
    #[arg(help_heading = BACKEND, long)]
    pub partial_sums: bool,
    /// SimpleSVM: the next violator is the largest one (greedy) or comes from SimplerSVM's
    /// priority queue.
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "greedy")]
    pub(crate) violator: Violator,
    /// SimpleSVM: linear solves by Cholesky updates (chol) or conjugate gradients (cg).
    #[arg(help_heading = STOPPING, long, value_enum, default_value = "chol")]
    pub(crate) linear_solver: LinearSolver,
    /// Kernel-column cache in MiB [default: 1024; on a hardware GPU as much as one storage
    /// binding holds (2048 on an H100), at least 1024].
    #[arg(help_heading = BACKEND, short = 'm', long, value_parser = crate::common::parse_count::<usize>)]
    pub(crate) cache_mb: Option<usize>,
    /// Worker threads (0 = one per core).
    #[arg(help_heading = BACKEND, long, default_value_t = 0, value_parser = crate::common::parse_count::<usize>)]
    pub(crate) threads: usize,
    /// GPU adapter: an index or part of a name, as `fwsvm info` lists them (default:
    /// WGPU_ADAPTER_NAME, else the best one).
    #[arg(help_heading = BACKEND, long, value_name = "INDEX|NAME")]
    pub(crate) device: Option<String>,
    /// Where ws runs its outer iterations on a GPU: on the device, batches of them per
    /// readback (auto: on a hardware adapter), or driven by the host, one or two round trips
    /// each (auto: on a software one).
    #[arg(help_heading = BACKEND, long, value_enum, default_value = "auto")]
    pub(crate) gpu_loop: fwsvm::backend::LoopPlace,
    /// Precision: on the CPU, of the cached kernel columns (the gradient is always f64); on the
    /// GPU, of the gradient (f64 needs an adapter with SHADER_F64). Default: f64 for simplesvm
    /// (its α reach C and its KKT test is absolute; f64 on a GPU only where the adapter has
    /// it), f32 otherwise
    #[arg(help_heading = BACKEND, long, value_enum)]
    pub(crate) precision: Option<Precision>,
    /// Print only errors and the accuracy line.
    #[arg(help_heading = OUTPUT, short = 'q', long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) data: DataArgs,
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

    /// The settings with what these options leave unset decided by the library
    /// ([`TrainParams::resolved`]).
    fn decided(&self) -> TrainParams {
        self.params(fwsvm::backend::Device::Cpu).resolved()
    }

    /// The solver: `-a`, or the library's default for this run.
    pub fn algorithm(&self) -> Algorithm {
        self.decided().solver.algorithm()
    }

    /// `--precision`, or the library's default for the algorithm.
    pub fn precision(&self) -> Precision {
        self.decided().cpu.precision()
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
    pub fn open_device(&self, backend: BackendArg) -> Result<fwsvm::backend::Device> {
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
    ) -> Result<fwsvm::backend::Device> {
        crate::common::device_request(
            backend,
            self.device.as_deref(),
            self.precision(),
            self.precision.is_some(),
            self.gpu_cache_bytes(),
        )
        .with_loop(self.gpu_loop)
        .open_for(ds, &mut |s| {
            if !self.quiet {
                eprintln!("fwsvm: {s}");
            }
        })
    }

    /// The library's training settings on `device`, what the options leave unset left to the
    /// library ([`TrainParams::resolved`]).
    pub fn params(&self, device: fwsvm::backend::Device) -> TrainParams {
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
                algorithm: self.algorithm,
                eps: self.eps,
                rel_eps: self.rel_eps,
                max_iter: self.max_iter,
                time_limit: self.time_limit.map(crate::common::limit_secs),
                seed: self.seed,
                init_size: self.init_size,
                ws_size: self.ws_size,
                warm_start: !self.no_warm_start,
                certify: !self.no_certify,
                stop: self.stop,
                simple: fwsvm::solver::simple_svm::SimpleParams {
                    violator: self.violator,
                    solver: self.linear_solver,
                },
            },
            cpu: CpuConfig {
                cache_bytes: self.cache_bytes(),
                precision: self.precision,
                ..CpuConfig::default()
            },
            device,
            sample: self.sample,
            partial_sums: self.partial_sums,
            merge_duplicates: self.duplicates.map(|d| d == Duplicates::Merge),
            shrink: (!self.no_shrink && self.shrinking != Some(false)).then(|| {
                fwsvm::solver::shrink::ShrinkParams {
                    min_points: if self.shrink || self.shrinking == Some(true) {
                        0
                    } else {
                        fwsvm::solver::shrink::SHRINK_MIN_POINTS
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
        comm: &dyn fwsvm::dist::comm::Comm,
        local: &Dataset,
    ) -> Result<fwsvm::backend::Device> {
        let rank = comm.rank();
        let req = crate::common::device_request(
            backend,
            self.device.as_deref(),
            self.precision(),
            self.precision.is_some(),
            self.gpu_cache_bytes(),
        );
        let quiet = self.quiet;
        let device = fwsvm::dist::open_rank_device(comm, req, local, &mut |s| {
            // The choice's note once (rank 0's); every rank names a GPU it took below.
            if !quiet {
                rank_line(rank, s);
            }
        })?;
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

/// `-m`'s default on the CPU (MiB).
const CACHE_MB: usize = 1024;

pub(crate) fn parse_gamma(s: &str) -> std::result::Result<Gamma, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Gamma::Auto);
    }
    match s.parse::<f64>() {
        Ok(g) if g > 0.0 && g.is_finite() => Ok(Gamma::Value(g)),
        _ => Err(format!("expected `auto` or a positive number, found `{s}`")),
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
pub(crate) fn parse_01(s: &str) -> std::result::Result<bool, String> {
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

/// `--duplicates`: what training does with repeated points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Duplicates {
    /// One weighted point per group.
    Merge,
    /// Every row its own point.
    Keep,
}
