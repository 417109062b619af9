//! `fwsvm train`.

pub use super::common::BackendArg;
use super::common::{
    DataArgs, ProgressLine, Trace, accuracy, accuracy_line, check_cache_mb, open_device,
    parse_positive, parse_rel, set_threads,
};
use clap::Args;
use fwsvm::backend::cpu::{CpuConfig, Precision};
use fwsvm::data::Dataset;
use fwsvm::error::{Error, Result};
use fwsvm::output::RunFiles;
use fwsvm::solver::simple_svm::{LinearSolver, Violator};
use fwsvm::solver::{Algorithm, Observer, SolverParams, StopRule};
use fwsvm::train::{Gamma, KernelKind, PairInfo, TrainParams, train};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

/// `fwsvm train` under mpirun.
#[cfg(feature = "mpi")]
mod distributed;
/// The training options and their parsers.
mod opts;
/// What a run prints: the first line, warnings, the summary and the test accuracy.
mod report;

use super::common::{BACKEND, OUTPUT};
pub use opts::TrainOpts;
pub(super) use opts::{parse_01, parse_gamma};
use report::*;

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
    pub distribute: fwsvm::dist::plan::Distribute,
    /// Test data: predict after training and print the accuracy.
    #[arg(help_heading = OUTPUT, long)]
    test: Option<PathBuf>,
    /// Write a CSV trace (iteration, seconds, f, gap, step kind, step size, active-set size).
    #[arg(help_heading = OUTPUT, long, value_name = "CSV")]
    trace: Option<PathBuf>,
}

/// Labels that look like a regression target rather than classes: more than
/// [`MAX_FRACTIONAL_CLASSES`] distinct values, some of them not whole numbers. fwsvm trains
/// classifiers; 60 such values would be 1,770 one-versus-one pairs.
const MAX_FRACTIONAL_CLASSES: usize = 10;

/// Above this many classes a note says how many one-versus-one pairs will be trained.
const MANY_CLASSES: usize = 20;

/// Pairs of rows over which a given γ is compared with the mean squared distance
/// ([`kernel_warnings`]).
const SPREAD_PAIRS: usize = 1_000;

/// The class labels of a training set, checked: at least two classes, and labels that look
/// like classes rather than a continuous target.
pub fn require_two_classes(ds: &Dataset, path: &std::path::Path) -> Result<Vec<f64>> {
    let classes = fwsvm::train::class_order(ds);
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
    kernel: &fwsvm::kernel::Kernel,
    path: &std::path::Path,
    seed: u64,
    gamma_auto: bool,
) -> Vec<String> {
    use fwsvm::kernel::Kernel;
    let mut out = Vec::new();
    let Some(gamma) = kernel.gamma() else {
        return out;
    };
    let name = path.display();
    if let Ok(ranges) = fwsvm::data::scale::ScaleParams::fit(ds, -1.0, 1.0)
        && let Some(s) = ranges.spread()
        && s.is_uneven()
    {
        out.push(format!(
            "fwsvm: warning: the features of {name} are on very different scales (feature {} \
             spans {}, the median feature {}): the kernel sees little but the widest \
             features; scale them first: `fwsvm scale -s ranges.txt {name} train.scaled` \
             (and `fwsvm scale -r ranges.txt TEST test.scaled` for test data)",
            s.feature,
            crate::fmt::fmt_g(s.widest, 4),
            crate::fmt::fmt_g(s.median, 4)
        ));
    }
    // γ times the mean squared distance between points is exactly 1 for γ auto (the same
    // seeded pairs): only a γ the user gave is measured, over fewer pairs than γ auto's (the
    // warning's thresholds are three orders of magnitude from 1; on a 1,300-row set the full
    // count took 4 % of the run's profile samples).
    if matches!(kernel, Kernel::Rbf { .. }) && !gamma_auto && ds.len() >= 2 {
        let spread = gamma / fwsvm::kernel::gamma_heuristic(ds, SPREAD_PAIRS, seed);
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
                crate::fmt::fmt_exact(gamma),
                crate::fmt::fmt_g(spread, 3)
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
    let r = fwsvm::train::cross_validate(ds, params, k, seed, &mut obs)?;
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
        crate::fmt::fmt_g(r.accuracy(), 6)
    );
    Ok(())
}

/// Runs `fwsvm train`.
pub fn run(args: TrainArgs) -> Result<()> {
    #[cfg(feature = "mpi")]
    if launched_by_mpirun() {
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
    if fwsvm::interrupt::requested() {
        return Err(Error::Interrupted(
            "before training started; nothing written".into(),
        ));
    }
    let params = a.params(a.open_device_for(args.backend, &ds)?);
    refuse_what_does_not_apply(&args, &params)?;
    // One-class training ignores the labels: any number of classes will do.
    let classes = if params.one_class {
        fwsvm::train::class_order(&ds)
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
        fwsvm::train::add_probabilities(&ds, &params, &mut model)?;
        if !a.quiet {
            eprintln!(
                "fwsvm: probability estimates: Platt's sigmoid for each class pair from {}-fold \
                 cross-validated decision values ({:.2}s)",
                fwsvm::train::PROBABILITY_FOLDS,
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
