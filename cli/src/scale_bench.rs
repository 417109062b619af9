//! `fwsvm bench scale`: training time against the number of rows on the CVM papers'
//! checkerboard (seeded, generated in memory), at a fixed ε: a table, a CSV, a log-log plot
//! and the least-squares exponent b of seconds ∝ m^b.

use super::common::{BackendArg, ProgressLine, open_device, set_threads};
use crate::experiment::scale::{ScaleHooks, ScalePlan, SizeRun, chart, csv, markdown, run_scale};
use clap::Args;
use fwsvm::backend::cpu::CpuConfig;
use fwsvm::error::{Error, Result};
use fwsvm::output::{RunFiles, write_output};
use fwsvm::solver::{Algorithm, Observer, SolverParams};
use fwsvm::train::{Gamma, KernelKind, TrainParams};
use std::io::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

/// Options of `fwsvm bench scale`.
#[derive(Debug, Args)]
pub struct ScaleBenchArgs {
    /// Training rows m, comma-separated (1e5 style accepted).
    #[arg(long, value_delimiter = ',', default_value = "1e4,3e4,1e5,3e5,1e6")]
    rows: Vec<String>,
    /// Rank counts, comma-separated: each size is also trained over P ranks played by threads
    /// of this process (the distributed run's overhead, traffic and per-rank memory; CPU).
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = super::common::parse_count::<usize>)]
    ranks: Vec<usize>,
    /// With --ranks above 1: each rank sums its own part of αᵀg and the line searches' sums
    /// (a few numbers per iteration instead of the active set's gradient entries; the same
    /// optimum within the certified gaps, not the single-process run to the bit).
    #[arg(long)]
    partial_sums: bool,
    /// Algorithm.
    #[arg(short = 'a', long, default_value = "partan")]
    algorithm: String,
    /// ε.
    #[arg(short = 'e', long, default_value_t = 1e-4, value_parser = super::common::parse_positive)]
    eps: f64,
    /// Also require gap ≤ rel-eps · 2f (as train; `inf` = the absolute rule alone).
    #[arg(long, default_value_t = 1.0, value_parser = super::common::parse_rel)]
    rel_eps: f64,
    /// C.
    #[arg(short = 'c', long, default_value_t = 100.0, value_parser = super::common::parse_positive)]
    cost: f64,
    /// RBF γ.
    #[arg(short = 'g', long, default_value_t = 2.0, value_parser = super::common::parse_positive)]
    gamma: f64,
    /// Squares per side of the board.
    #[arg(long, default_value_t = 4, value_parser = super::common::parse_count::<u32>)]
    board: u32,
    /// Test rows (another seed).
    #[arg(long, default_value_t = 20_000, value_parser = super::common::parse_count::<usize>)]
    test_rows: usize,
    /// Seed of the training rows (the test rows use seed + 1).
    #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
    seed: u64,
    /// Randomized iterations (as train's --sample).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    sample: usize,
    /// Stop each run after this many seconds (the row says so).
    #[arg(long, value_parser = super::common::parse_positive)]
    time_limit: Option<f64>,
    /// Skip the exact certification of each run (at 10⁷ rows it costs more than training);
    /// the gap column is then the solver's own.
    #[arg(long)]
    no_certify: bool,
    /// Compute backend.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// GPU adapter: an index or part of a name.
    #[arg(long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// Kernel-column cache in MiB.
    #[arg(long, default_value_t = 1024, value_parser = super::common::parse_count::<usize>)]
    cache_mb: usize,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// Output directory (scale.md, scale.csv, scale.svg).
    #[arg(long, default_value = "bench-scale")]
    out: PathBuf,
    /// No progress lines.
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// The CLI's side of the bench: a progress line per size, the CSV rewritten after each.
struct CliHooks {
    quiet: bool,
    csv: PathBuf,
}

impl ScaleHooks for CliHooks {
    fn observers(&mut self, label: &str) -> Vec<Box<dyn Observer>> {
        ProgressLine::new(label.to_string(), self.quiet)
            .map(|p| vec![Box::new(p) as Box<dyn Observer>])
            .unwrap_or_default()
    }

    fn finished(&mut self, runs: &[SizeRun]) -> Result<()> {
        let r = &runs[runs.len() - 1];
        write_output(&self.csv, |w| w.write_all(csv(runs).as_bytes()))?;
        if !self.quiet {
            eprintln!(
                "fwsvm: m = {}: {:.2}s, {} iterations, {} SVs, {:.2} %",
                r.m, r.seconds, r.iterations, r.svs, r.accuracy
            );
        }
        Ok(())
    }
}

/// Runs `fwsvm bench scale`.
pub fn run(a: ScaleBenchArgs) -> Result<()> {
    set_threads(a.threads, a.quiet);
    super::common::check_cache_mb(a.cache_mb)?;
    let rows: Vec<usize> = a
        .rows
        .iter()
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| *v >= 2.0 && v.fract() == 0.0 && *v <= 1e9)
                .map(|v| v as usize)
                .ok_or_else(|| {
                    Error::param(format!(
                        "--rows: `{s}` is not a whole row count from 2 to 1e9"
                    ))
                })
        })
        .collect::<Result<_>>()?;
    let alg = Algorithm::from_str(&a.algorithm)
        .map_err(|_| Error::param(format!("unknown algorithm `{}`", a.algorithm)))?;
    if let Some(t) = a.time_limit
        && !(t > 0.0 && t.is_finite())
    {
        return Err(Error::param(format!(
            "--time-limit must be a positive number of seconds, got {t}"
        )));
    }
    let precision = alg.default_precision();
    let device = open_device(
        a.backend,
        a.device.as_deref(),
        precision,
        false,
        Some(a.cache_mb << 20),
        a.quiet,
    )?;
    let csv_path = a.out.join("scale.csv");
    RunFiles::new()
        .output("results CSV", &csv_path)
        .output("plot", &a.out.join("scale.svg"))
        .output("table", &a.out.join("scale.md"))
        .check()?;
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, e))?;
    let plan = ScalePlan {
        rows,
        board: a.board,
        seed: a.seed,
        test_rows: a.test_rows,
        params: TrainParams {
            kernel: KernelKind::Rbf,
            gamma: Gamma::Value(a.gamma),
            c: a.cost,
            solver: SolverParams {
                algorithm: Some(alg),
                eps: a.eps,
                rel_eps: Some(a.rel_eps),
                certify: !a.no_certify,
                time_limit: a.time_limit.map(crate::common::limit_secs),
                ..SolverParams::default()
            },
            cpu: CpuConfig {
                cache_bytes: a.cache_mb << 20,
                precision: Some(precision),
                ..CpuConfig::default()
            },
            device,
            sample: a.sample,
            shrink: None,
            partial_sums: a.partial_sums,
            ..TrainParams::default()
        },
        ranks: a.ranks.clone(),
    };
    let mut hooks = CliHooks {
        quiet: a.quiet,
        csv: csv_path.clone(),
    };
    let runs = run_scale(&plan, &mut hooks).map_err(|e| match e {
        Error::Interrupted(msg) => Error::Interrupted(format!("{msg} in {}", csv_path.display())),
        e => e,
    })?;
    let md = markdown(&plan, &runs);
    let svg = chart(&plan, &runs)?;
    write_output(&a.out.join("scale.svg"), |w| w.write_all(svg.as_bytes()))?;
    write_output(&a.out.join("scale.md"), |w| w.write_all(md.as_bytes()))?;
    print!("{md}");
    Ok(())
}
