//! `fwsvm check`: the same training on the CPU and on the GPU, compared.
//!
//! Three runs:
//! 1. the CPU backend alone and 2. the GPU backend alone, each to its stop rule: iterations,
//!    certified gap, objective, SVs, seconds, and the labels both models give the training and
//!    test data;
//! 3. a lockstep run ([`Mirror`]): the GPU backend drives the solver and the CPU backend (f64
//!    columns, the reference) follows the same α, so their gradients can be compared entry by entry at checkpoints;
//!    it also counts the iterations whose vertex choices differ;
//! 4. with ws, its outer iterations on the device against their replay on the host
//!    ([`fwsvm::solver::device_replay`]), in f64 where the adapter has SHADER_F64, on the
//!    first [`REPLAY_ROWS`] rows of the first two classes (their distinct points): the same |W| and inner steps every
//!    iteration, α within 1e-10, until a near-tie that f64 rounding may break either way
//!    ([`fwsvm::solver::device_replay::Replay::parted_at_tie`]: from there the runs may
//!    legitimately part).
//!
//! Tolerances (documented in docs/GUIDE.md, all adjustable):
//! * objective: both certified objectives are within their certified gap of the optimum, so
//!   |f_cpu − f_gpu| ≤ max(gap_cpu, gap_gpu) whenever both solvers are right (plus 1e-9·f for
//!   f64 rounding of the certification itself);
//! * gradient: max|g_gpu − g_cpu| / max_i Q_ii at every checkpoint ≤ `--grad-tol` (default
//!   1e-5 with an f32 GPU gradient, 1e-12 with f64); max_i Q_ii bounds every |Q_ij| and |g_i|,
//!   and column rounding is relative to it;
//! * labels: agreement on the training set and on the test set ≥ `--min-agreement` %.

use super::common::{BackendArg, ProgressLine};
use super::train::{TrainOpts, launched_by_mpirun, require_two_classes};
use clap::Args;
use fwsvm::backend::Device;
use fwsvm::backend::cpu::{Precision, cpu_backend};
use fwsvm::backend::mirror::{GradientCheck, Mirror};
use fwsvm::data::Dataset;
use fwsvm::error::{Error, Result};
use fwsvm::model::Model;
use fwsvm::problem::Problem;
use fwsvm::solver::{Observer, SolveResult, SolverParams, solve};
use fwsvm::train::{PairReport, TrainParams, train};
use std::path::PathBuf;
use std::time::Instant;

/// Options of `fwsvm check`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct CheckArgs {
    /// Print help (-h is svm-train's shrinking switch here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Training data.
    train: PathBuf,
    /// Iterations at which the lockstep run compares the full gradients (the run stops after
    /// the last one, or earlier at the stop rule; the final iterate is always compared).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,10,100,1000,10000",
        value_name = "LIST"
    )]
    checkpoints: Vec<u64>,
    /// Minimum label agreement between the two models, in percent, on the training and test data.
    #[arg(long, default_value_t = 99.0)]
    min_agreement: f64,
    /// Largest accepted max|g_gpu − g_cpu| / max_i Q_ii at a checkpoint [default: 1e-5 with
    /// --precision f32, 1e-12 with f64].
    #[arg(long, value_parser = super::common::parse_positive)]
    grad_tol: Option<f64>,
    /// Test data: both models predict it, and their labels must agree too.
    #[arg(long, help_heading = super::common::OUTPUT)]
    test: Option<PathBuf>,
    #[command(flatten)]
    opts: TrainOpts,
}

struct Run {
    model: Model,
    reports: Vec<PairReport>,
    wall: f64,
}

fn run_one(ds: &Dataset, params: &TrainParams, label: &str, quiet: bool) -> Result<Run> {
    let t = Instant::now();
    let mut obs = |_: &fwsvm::train::PairInfo| -> Vec<Box<dyn Observer>> {
        ProgressLine::new(label.to_string(), quiet)
            .map(|p| vec![Box::new(p) as Box<dyn Observer>])
            .unwrap_or_default()
    };
    let (model, reports) = train(ds, params, &mut obs)?;
    Ok(Run {
        model,
        reports,
        wall: t.elapsed().as_secs_f64(),
    })
}

fn agreement(a: &[f64], b: &[f64]) -> f64 {
    let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
    100.0 * same as f64 / a.len().max(1) as f64
}

/// What the lockstep run found.
struct Lockstep {
    /// The GPU run's outcome.
    result: SolveResult,
    /// The gradient comparisons at the checkpoints.
    checks: Vec<GradientCheck>,
    /// Iterations whose s (then v) differed between the two backends.
    s_mismatches: u64,
    v_mismatches: u64,
    /// The first iteration that differed.
    first_mismatch: Option<u64>,
}

/// The lockstep run on the first pair of classes.
fn lockstep(
    ds: &Dataset,
    classes: &[f64],
    gpu: &TrainParams,
    checkpoints: &[u64],
) -> Result<Lockstep> {
    let kernel = gpu.resolve_kernel(ds)?;
    let (a, b) = (classes[0], classes[1]);
    let sub;
    let data = if classes.len() == 2 {
        ds
    } else {
        let rows: Vec<usize> = (0..ds.len())
            .filter(|&i| ds.labels[i] == a || ds.labels[i] == b)
            .collect();
        sub = ds.subset(&rows);
        &sub
    };
    let y: Vec<f64> = data
        .labels
        .iter()
        .map(|&l| if l == a { 1.0 } else { -1.0 })
        .collect();
    let prob = Problem::new(data, y, kernel, gpu.c)?
        .with_class_weights(gpu.class_weight_of(a), gpu.class_weight_of(b))?;
    let last = checkpoints.iter().copied().max().unwrap_or(0);
    let params = SolverParams {
        max_iter: gpu.solver.max_iter.min(last),
        certify: false,
        ..gpu.solver.clone()
    };
    let primary = gpu.device.backend(&prob, gpu.cpu)?;
    // The reference: f64 columns on the CPU, whatever the GPU's precision.
    let secondary = cpu_backend(
        &prob,
        fwsvm::backend::cpu::CpuConfig {
            precision: Some(Precision::F64),
            ..gpu.cpu
        },
    );
    let mut mirror = Mirror::new(primary, secondary, checkpoints.to_vec());
    let r = solve(&prob, &mut mirror, &params, &mut [])?;
    if mirror.checks.last().map(|c| c.iteration) != Some(r.iterations) {
        mirror.compare(r.iterations, &r.alpha)?;
    }
    Ok(Lockstep {
        result: r,
        checks: mirror.checks.clone(),
        s_mismatches: mirror.s_mismatches,
        v_mismatches: mirror.v_mismatches,
        first_mismatch: mirror.first_mismatch,
    })
}

/// Runs `fwsvm check`.
pub fn run(args: CheckArgs) -> Result<()> {
    let o = &args.opts;
    o.refuse_train_only("check")?;
    // One process: the defaults it decides (algorithm, precision) are those of one process.
    if launched_by_mpirun() {
        return Err(Error::param(
            "fwsvm check compares two backends in one process; run it without mpirun".into(),
        ));
    }
    let (ds, test, _) = o.read(&args.train, args.test.as_deref())?;
    let classes = require_two_classes(&ds, &args.train)?;
    let quiet = o.quiet();
    let gpu_device = o.open_device(BackendArg::Gpu)?;
    if matches!(gpu_device, Device::Cpu) {
        return Err(Error::param(
            "fwsvm check needs a GPU adapter (`fwsvm info` lists them)".into(),
        ));
    }
    // The precision the device got (an algorithm's f64 default falls to f32 without SHADER_F64).
    #[cfg(feature = "gpu")]
    let gpu_precision = match &gpu_device {
        Device::Gpu { cfg, .. } => cfg.precision,
        Device::Cpu => o.precision(),
    };
    #[cfg(not(feature = "gpu"))]
    let gpu_precision = o.precision();
    let grad_tol = gradient_tolerance(&args, gpu_precision)?;
    // One process: the library decides what the options leave unset, once for both runs.
    let cpu_params = o.params(Device::Cpu).resolved();
    if cpu_params.sample > 0 {
        return Err(Error::param(
            "fwsvm check compares the full-gradient backends; --sample is not supported by it yet"
                .into(),
        ));
    }
    let gpu_params = TrainParams {
        solver: SolverParams {
            certify: true,
            ..cpu_params.solver.clone()
        },
        ..o.params(gpu_device.clone()).resolved()
    };
    let cpu_params = TrainParams {
        solver: gpu_params.solver.clone(),
        ..cpu_params
    };
    if !quiet {
        eprintln!(
            "fwsvm check: {} rows, {} classes; {} on cpu and on {}",
            ds.len(),
            classes.len(),
            cpu_params.solver.algorithm(),
            gpu_device.describe()
        );
    }
    let cpu = run_one(&ds, &cpu_params, "cpu", quiet)?;
    let gpu = run_one(&ds, &gpu_params, "gpu", quiet)?;
    let Lockstep {
        result: lock,
        checks,
        s_mismatches: s_mis,
        v_mismatches: v_mis,
        first_mismatch: first_mis,
    } = lockstep(&ds, &classes, &gpu_params, &args.checkpoints)?;

    let mut failures = Vec::new();
    #[cfg(feature = "gpu")]
    let replay = device_replay(&ds, &classes, &gpu_params, &gpu_device)?;
    print_summary(&cpu, &gpu, &mut failures);
    print_gradient_checks(
        &classes,
        &lock,
        (s_mis, v_mis, first_mis),
        &checks,
        grad_tol,
        &mut failures,
    );
    #[cfg(feature = "gpu")]
    print_replay(replay.as_ref(), &mut failures);
    println!();
    print_label_agreement(
        &ds,
        test.as_ref(),
        &cpu,
        &gpu,
        args.min_agreement,
        &mut failures,
    );
    if failures.is_empty() {
        println!(
            "check: passed (objective within the certified gaps, gradients within {grad_tol:.1e}, labels ≥ {}%)",
            args.min_agreement
        );
        Ok(())
    } else {
        Err(Error::Mismatch(failures.join("; ")))
    }
}

/// Rows of the device loop's replay (the host's side costs m·|W| kernel values an iteration).
pub const REPLAY_ROWS: usize = 3000;
/// Outer iterations the replay compares (one batch each).
const REPLAY_ITERATIONS: usize = 20;

/// Part 4: ws's device loop against its host replay on the first two classes' first
/// [`REPLAY_ROWS`] rows (None: not ws, or no SHADER_F64 — said on stderr).
#[cfg(feature = "gpu")]
fn device_replay(
    ds: &Dataset,
    classes: &[f64],
    gpu: &TrainParams,
    device: &Device,
) -> Result<Option<(usize, fwsvm::solver::device_replay::Replay)>> {
    use fwsvm::backend::LoopPlace;
    use fwsvm::backend::gpu::{GpuBackend, GpuConfig};
    let Device::Gpu { ctx, cfg, .. } = device else {
        return Ok(None);
    };
    if gpu.solver.algorithm() != fwsvm::solver::Algorithm::Ws {
        return Ok(None);
    }
    if !ctx.f64 {
        eprintln!(
            "fwsvm check: the device loop's replay needs f64 (SHADER_F64), which {} lacks; skipped",
            ctx.adapter.name
        );
        return Ok(None);
    }
    let (a, b) = (classes[0], classes[1]);
    let rows: Vec<usize> = (0..ds.len())
        .filter(|&i| ds.labels[i] == a || ds.labels[i] == b)
        .take(REPLAY_ROWS)
        .collect();
    // Distinct rows only: copies of a point are exact ties of g that rounding breaks either
    // way on the two sides (training merges them too).
    let first = ds.subset(&rows);
    let sub = first.subset(&fwsvm::problem::distinct_rows_of(&first).rows);
    let y: Vec<f64> = sub
        .labels
        .iter()
        .map(|&l| if l == a { 1.0 } else { -1.0 })
        .collect();
    let prob = Problem::new(&sub, y, gpu.resolve_kernel(ds)?, gpu.c)?;
    // Two points of each class, equal weights: a start on the simplex with both labels.
    let mut a0 = fwsvm::active::ActiveSet::new(prob.len());
    for label in [1.0, -1.0] {
        for i in (0..prob.len()).filter(|&i| prob.y[i] == label).take(2) {
            a0.set(i, 0.25);
        }
    }
    let cfg = GpuConfig {
        precision: Precision::F64,
        loop_place: LoopPlace::Device,
        ..*cfg
    };
    let mut be = GpuBackend::new(&prob, ctx, cfg)?;
    let q = 64.min(prob.len() / 2).max(2);
    let r = fwsvm::solver::device_replay::replay(
        &prob,
        &mut be,
        &a0,
        q,
        (gpu.solver.eps, 1e-12),
        REPLAY_ITERATIONS,
        1,
        1e-10,
    )?;
    Ok(Some((prob.len(), r)))
}

/// Part 4's line; a difference goes to `failures`.
#[cfg(feature = "gpu")]
fn print_replay(
    r: Option<&(usize, fwsvm::solver::device_replay::Replay)>,
    failures: &mut Vec<String>,
) {
    let Some((rows, r)) = r else { return };
    println!();
    println!(
        "device loop against its host replay (f64, {rows} rows, {} outer iterations): {} of {} the same (|W|, inner steps), α within {:.1e}",
        r.iterations, r.matching, r.batches, r.max_alpha_diff
    );
    if let Some(d) = &r.first_difference {
        if r.parted_at_tie {
            println!(
                "first difference: {d}, after a near-tie that rounding breaks either way (the runs legitimately part)"
            );
        } else {
            println!("first difference: {d}");
            failures.push(format!(
                "the device loop differs from its host replay ({d})"
            ));
        }
    }
}

/// The side-by-side table of the two runs; objectives further apart than their certified gaps
/// allow go to `failures`.
fn print_summary(cpu: &Run, gpu: &Run, failures: &mut Vec<String>) {
    println!("| | cpu | gpu |");
    println!("|---|---|---|");
    let sum = |r: &Run, f: &dyn Fn(&PairReport) -> f64| r.reports.iter().map(f).sum::<f64>();
    let iters = |r: &Run| r.reports.iter().map(|p| p.result.iterations).sum::<u64>();
    let max_gap = |r: &Run| {
        r.reports
            .iter()
            .map(|p| p.result.certified_gap.unwrap_or(f64::INFINITY))
            .fold(0.0f64, f64::max)
    };
    println!("| iterations | {} | {} |", iters(cpu), iters(gpu));
    println!(
        "| certified gap (max over pairs) | {:.3e} | {:.3e} |",
        max_gap(cpu),
        max_gap(gpu)
    );
    let obj = |r: &PairReport| r.result.certified_f.unwrap_or(r.result.f);
    println!(
        "| objective | {:.9} | {:.9} |",
        sum(cpu, &obj),
        sum(gpu, &obj)
    );
    println!(
        "| SVs | {} | {} |",
        cpu.model.total_sv(),
        gpu.model.total_sv()
    );
    println!(
        "| solver seconds | {:.2} | {:.2} |",
        sum(cpu, &|p| p.result.seconds),
        sum(gpu, &|p| p.result.seconds)
    );
    println!("| wall seconds | {:.2} | {:.2} |", cpu.wall, gpu.wall);
    let traffic = |r: &Run| {
        let mut t = fwsvm::backend::BackendStats::default();
        for p in &r.reports {
            t.add(&p.result.stats);
        }
        t
    };
    let (tc, tg) = (traffic(cpu), traffic(gpu));
    let per = |v: u64, r: &Run| crate::fmt::fmt_g(v as f64 / iters(r).max(1) as f64, 4);
    type Field = fn(&fwsvm::backend::BackendStats) -> u64;
    let rows: [(&str, Field); 5] = [
        ("device round trips", |t| t.round_trips),
        ("submits", |t| t.submits),
        ("dispatches", |t| t.dispatches),
        ("bytes up", |t| t.bytes_up),
        ("bytes down", |t| t.bytes_down),
    ];
    for (name, field) in rows {
        println!(
            "| {name} / iteration | {} | {} |",
            per(field(&tc), cpu),
            per(field(&tg), gpu)
        );
    }
    for (pc, pg) in cpu.reports.iter().zip(&gpu.reports) {
        let (fc, fg) = (obj(pc), obj(pg));
        let gc = pc.result.certified_gap.unwrap_or(f64::INFINITY);
        let gg = pg.result.certified_gap.unwrap_or(f64::INFINITY);
        let bound = gc.max(gg) + 1e-9 * fc.abs().max(fg.abs());
        if (fc - fg).abs() > bound {
            failures.push(format!(
                "pair {} vs {}: objectives {fc:.9} (cpu) and {fg:.9} (gpu) differ by {:.3e}, more \
                 than the certified gaps allow ({bound:.3e})",
                pc.classes.0,
                pc.classes.1,
                (fc - fg).abs()
            ));
        }
    }
}

/// The lockstep run's vertex agreement and gradient checks; checks past `grad_tol` go to
/// `failures`.
fn print_gradient_checks(
    classes: &[f64],
    lock: &SolveResult,
    (s_mis, v_mis, first_mis): (u64, u64, Option<u64>),
    checks: &[GradientCheck],
    grad_tol: f64,
    failures: &mut Vec<String>,
) {
    println!();
    println!(
        "lockstep (gpu drives, cpu follows; pair {} vs {}): {} iterations, {} with a different \
         argmin s, {} with a different active argmax v{}",
        classes[0],
        classes[1],
        lock.iterations,
        s_mis,
        v_mis,
        first_mis
            .map(|i| format!(" (first at iteration {i})"))
            .unwrap_or_default()
    );
    println!();
    println!(
        "| iteration | max abs(g_gpu - g_cpu) | max abs(g_cpu) | relative | abs(2f_gpu - 2f_cpu) |"
    );
    println!("|---|---|---|---|---|");
    for c in checks {
        println!(
            "| {} | {:.3e} | {:.3e} | {:.3e} | {:.3e} |",
            c.iteration,
            c.max_abs_diff,
            c.max_abs_g,
            c.relative(),
            c.alpha_g_diff
        );
        if !(c.relative() <= grad_tol) {
            failures.push(format!(
                "iteration {}: max|g_gpu − g_cpu| / max Q_ii = {:.3e} > --grad-tol {grad_tol:.1e}",
                c.iteration,
                c.relative()
            ));
        }
    }
}

/// How often the two models give the same label, on the training and test rows; below
/// `min_agreement` % goes to `failures`.
fn print_label_agreement(
    ds: &Dataset,
    test: Option<&Dataset>,
    cpu: &Run,
    gpu: &Run,
    min_agreement: f64,
    failures: &mut Vec<String>,
) {
    let mut label_rows = vec![("training", ds)];
    if let Some(t) = test {
        label_rows.push(("test", t));
    }
    for (name, data) in label_rows {
        if data.is_empty() {
            println!("{name} labels: no rows");
            continue;
        }
        let pc = cpu.model.predict(data);
        let pg = gpu.model.predict(data);
        let agree = agreement(&pc, &pg);
        let acc_c = agreement(&pc, &data.labels);
        let acc_g = agreement(&pg, &data.labels);
        println!(
            "{name} labels: {agree:.3}% identical ({} rows); accuracy cpu {acc_c:.3}%, gpu {acc_g:.3}%",
            data.len()
        );
        if agree < min_agreement {
            failures.push(format!(
                "{name} labels agree on {agree:.3}% < --min-agreement {}%",
                min_agreement
            ));
        }
    }
}

/// `--grad-tol` (by default what the device's precision allows), with `--min-agreement`
/// checked to be a percentage.
fn gradient_tolerance(args: &CheckArgs, gpu_precision: Precision) -> Result<f64> {
    let grad_tol = args.grad_tol.unwrap_or(match gpu_precision {
        Precision::F32 => 1e-5,
        Precision::F64 => 1e-12,
    });
    if !(args.min_agreement >= 0.0 && args.min_agreement <= 100.0) {
        return Err(Error::param(format!(
            "--min-agreement must be a percentage, got {}",
            args.min_agreement
        )));
    }
    Ok(grad_tol)
}
