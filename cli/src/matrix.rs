//! `fwsvm bench` (no subcommand): the papers' evaluation as one command — a matrix of
//! algorithms × datasets × backends × ε × repeats, written as a Markdown table in the layout
//! of Table 2 of Frandi, Ñanculef, Suykens, *A PARTAN-Accelerated Frank-Wolfe Algorithm for
//! Large-Scale SVM Classification*, 2015 (time, speed-up over FW, iterations, SVs, gap,
//! accuracy), a CSV, SVG plots (duality gap against seconds per variant; speed-up of each
//! variant over fw) and, with three datasets or more, the tests of Ñanculef, Frandi, Sartori,
//! Allende, *A Novel Frank-Wolfe Algorithm. Analysis and Applications to Large-Scale SVM
//! Training*, 2014: Friedman with the Iman–Davenport correction and pairwise Wilcoxon
//! signed-rank tests with exact p-values, on time and on accuracy.

use super::common::{BackendArg, DataArgs, ProgressLine, open_device, set_threads};
use super::train::parse_gamma;
use crate::experiment::matrix::{
    DatasetSpec, MatrixBackend, MatrixHooks, Plan, Run, run_matrix, split_70_30,
};
use crate::experiment::report::{plots, report, write_csv};
use clap::Args;
use fwsvm::backend::Device;
use fwsvm::backend::cpu::Precision;
use fwsvm::data::Dataset;
use fwsvm::error::{Error, Result};
use fwsvm::output::{RunFiles, write_output};
use fwsvm::solver::{Algorithm, Observer};
use fwsvm::train::{Gamma, KernelKind};
use serde::Deserialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Options of `fwsvm bench` (the matrix).
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Algorithms, comma-separated.
    #[arg(
        short = 'a',
        long = "algorithms",
        value_delimiter = ',',
        default_value = "fw,mfw,swap,swap2,partan"
    )]
    algorithms: Vec<String>,
    /// Datasets, comma-separated, each TRAIN[:TEST][@C]: without TEST a seeded stratified
    /// 70/30 split of TRAIN; @C overrides -c for that dataset.
    #[arg(long, value_delimiter = ',')]
    datasets: Vec<String>,
    /// Backends.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: MatrixBackend,
    /// Stopping tolerances ε, comma-separated.
    #[arg(short = 'e', long, value_delimiter = ',', default_value = "1e-4", value_parser = super::common::parse_positive)]
    eps: Vec<f64>,
    /// Runs of each cell (seeds --seed, --seed + 1, …).
    #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<usize>)]
    repeats: usize,
    /// First seed (initial sample, γ auto, the 70/30 split).
    #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
    seed: u64,
    /// Output directory (table.md, results.csv, *.svg).
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// A TOML file describing the matrix (see docs/GUIDE.md, "Comparing algorithms"); it replaces the matrix flags.
    #[arg(long)]
    config: Option<PathBuf>,
    /// C (the L2-SVM's; LIBSVM's for simplesvm).
    #[arg(short = 'c', long, default_value_t = 1.0, value_parser = super::common::parse_positive)]
    cost: f64,
    /// γ, or `auto`.
    #[arg(short = 'g', long, default_value = "auto", value_parser = parse_gamma)]
    gamma: Gamma,
    /// Kernel.
    #[arg(short = 'k', long, value_enum, default_value = "rbf")]
    kernel: KernelKind,
    /// Also require gap ≤ rel-eps · 2f (as train).
    #[arg(long, default_value_t = 1.0, value_parser = super::common::parse_rel)]
    rel_eps: f64,
    /// Randomized iterations (as train's --sample).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    sample: usize,
    /// Stop each run after this many seconds.
    #[arg(long, value_parser = super::common::parse_positive)]
    time_limit: Option<f64>,
    /// Kernel-column cache in MiB.
    #[arg(long, default_value_t = 1024, value_parser = super::common::parse_count::<usize>)]
    cache_mb: usize,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// GPU adapter: an index or part of a name.
    #[arg(long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// No progress lines.
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    data: DataArgs,
}

/// The TOML form of the matrix.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    algorithms: Option<Vec<String>>,
    backend: Option<MatrixBackend>,
    eps: Option<Vec<f64>>,
    repeats: Option<usize>,
    seed: Option<u64>,
    c: Option<f64>,
    gamma: Option<f64>,
    kernel: Option<String>,
    rel_eps: Option<f64>,
    sample: Option<usize>,
    time_limit: Option<f64>,
    #[serde(rename = "dataset")]
    datasets: Vec<DatasetSpec>,
}

fn parse_dataset(s: &str) -> Result<DatasetSpec> {
    let (files, c) = match s.rsplit_once('@') {
        Some((f, c)) => {
            let c: f64 = c.parse().map_err(|_| {
                Error::param(format!("--datasets `{s}`: `@{c}` is not a number (C)"))
            })?;
            (f, Some(c))
        }
        None => (s, None),
    };
    let (train, test) = match files.split_once(':') {
        Some((a, b)) => (a, Some(PathBuf::from(b))),
        None => (files, None),
    };
    if train.is_empty() {
        return Err(Error::param(format!("--datasets `{s}`: no training file")));
    }
    Ok(DatasetSpec {
        name: None,
        train: PathBuf::from(train),
        test,
        c,
        gamma: None,
    })
}

fn parse_algorithms(v: &[String]) -> Result<Vec<Algorithm>> {
    let algs: Vec<Algorithm> = v
        .iter()
        .map(|a| {
            <Algorithm as FromStr>::from_str(a.trim()).map_err(|_| {
                Error::param(format!(
                    "unknown algorithm `{a}` (fw, mfw, swap, swap2, partan, cvm, sparse-fw, simplesvm)"
                ))
            })
        })
        .collect::<Result<_>>()?;
    if algs.is_empty() {
        return Err(Error::param("no algorithm given (-a)".into()));
    }
    Ok(algs)
}

fn kernel_kind(k: &str) -> Result<KernelKind> {
    match k {
        "rbf" => Ok(KernelKind::Rbf),
        "poly" => Ok(KernelKind::Poly),
        "linear" => Ok(KernelKind::Linear),
        "sigmoid" => Ok(KernelKind::Sigmoid),
        _ => Err(Error::param(format!(
            "kernel `{k}`: expected rbf, poly, linear or sigmoid"
        ))),
    }
}

impl MatrixArgs {
    fn plan(&self) -> Result<Plan> {
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let cfg: Config = toml::from_str(&text).map_err(|e| Error::InvalidData {
                path: path.clone(),
                msg: e.to_string().trim_end().replace('\n', " "),
            })?;
            let base = path.parent().unwrap_or(Path::new("."));
            let datasets = cfg
                .datasets
                .into_iter()
                .map(|mut d| {
                    // Paths in the file are relative to the file.
                    d.train = base.join(&d.train);
                    d.test = d.test.map(|t| base.join(t));
                    d
                })
                .collect();
            return Ok(Plan {
                algorithms: parse_algorithms(&cfg.algorithms.unwrap_or_else(|| {
                    Algorithm::FW.iter().map(|a| a.name().to_string()).collect()
                }))?,
                datasets,
                backend: cfg.backend.unwrap_or(MatrixBackend::Cpu),
                eps: cfg.eps.unwrap_or_else(|| vec![1e-4]),
                repeats: cfg.repeats.unwrap_or(1),
                seed: cfg.seed.unwrap_or(1),
                c: cfg.c.unwrap_or(1.0),
                gamma: cfg.gamma.map_or(Gamma::Auto, Gamma::Value),
                kernel: kernel_kind(cfg.kernel.as_deref().unwrap_or("rbf"))?,
                rel_eps: cfg.rel_eps.unwrap_or(1.0),
                sample: cfg.sample.unwrap_or(0),
                time_limit: cfg.time_limit,
            });
        }
        Ok(Plan {
            algorithms: parse_algorithms(&self.algorithms)?,
            datasets: self
                .datasets
                .iter()
                .map(|s| parse_dataset(s))
                .collect::<Result<_>>()?,
            backend: self.backend,
            eps: self.eps.clone(),
            repeats: self.repeats,
            seed: self.seed,
            c: self.cost,
            gamma: self.gamma,
            kernel: self.kernel,
            rel_eps: self.rel_eps,
            sample: self.sample,
            time_limit: self.time_limit,
        })
    }
}

/// The CLI's side of the matrix: data read with the reader options, a progress line per
/// run, and the CSV rewritten after each.
struct CliHooks<'a> {
    data: &'a DataArgs,
    seed: u64,
    quiet: bool,
    csv: PathBuf,
}

impl MatrixHooks for CliHooks<'_> {
    fn load(&mut self, spec: &DatasetSpec) -> Result<(Dataset, Dataset)> {
        let ds = self.data.read(&spec.train, self.quiet)?;
        match &spec.test {
            Some(t) => Ok((ds, self.data.read(t, self.quiet)?)),
            None => Ok(split_70_30(&ds, self.seed)),
        }
    }

    fn observers(&mut self, label: &str) -> Vec<Box<dyn Observer>> {
        ProgressLine::new(label.to_string(), self.quiet)
            .map(|p| vec![Box::new(p) as Box<dyn Observer>])
            .unwrap_or_default()
    }

    fn finished(&mut self, k: usize, total: usize, runs: &[Run]) -> Result<()> {
        let run = &runs[runs.len() - 1];
        if !self.quiet {
            eprintln!(
                "fwsvm: [{k}/{total}] {} {} ε={:e} {} #{}: {:.2}s, {} iterations, {} SVs, gap {:.2e}, {:.2} %",
                run.dataset,
                run.algorithm,
                run.eps,
                run.backend,
                run.repeat + 1,
                run.seconds,
                run.iterations,
                run.svs,
                run.gap,
                run.accuracy
            );
        }
        write_csv(&self.csv, runs)
    }
}

/// Runs the matrix.
pub fn run(a: MatrixArgs) -> Result<()> {
    set_threads(a.threads, a.quiet);
    super::common::check_cache_mb(a.cache_mb)?;
    let mut plan = a.plan()?;
    plan.check()?;
    let mut files = RunFiles::new();
    files.input_opt("configuration", a.config.as_deref());
    for d in &plan.datasets {
        files
            .input("training data", &d.train)
            .input_opt("test data", d.test.as_deref());
    }
    let csv = a.out.join("results.csv");
    files
        .output("results CSV", &csv)
        .output("table", &a.out.join("table.md"));
    let bnames = plan.backend_names();
    let mut plot_names: Vec<PathBuf> = Vec::new();
    for b in &bnames {
        for eps in &plan.eps {
            plot_names.push(a.out.join(format!("speedup_{b}_{eps:e}.svg")));
            for d in &plan.datasets {
                let ds = d.name.as_deref().unwrap_or_default();
                plot_names.push(a.out.join(format!("gap_{ds}_{b}_{eps:e}.svg")));
            }
        }
    }
    for p in &plot_names {
        files.output("plot", p);
    }
    files.check()?;
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, e))?;
    let mut backends: Vec<(&'static str, Device)> = Vec::new();
    for b in bnames {
        let dev = match b {
            "cpu" => Device::Cpu,
            _ => open_device(
                BackendArg::Gpu,
                a.device.as_deref(),
                Precision::F32,
                false,
                Some(a.cache_mb << 20),
                a.quiet,
            )?,
        };
        backends.push((b, dev));
    }
    let mut hooks = CliHooks {
        data: &a.data,
        seed: plan.seed,
        quiet: a.quiet,
        csv: csv.clone(),
    };
    let runs = run_matrix(&plan, &backends, a.cache_mb << 20, &mut hooks).map_err(|e| match e {
        Error::Interrupted(msg) => Error::Interrupted(format!("{msg} in {}", csv.display())),
        e => e,
    })?;
    let names: Vec<&str> = backends.iter().map(|b| b.0).collect();
    let md = report(&plan, &runs, &names);
    write_output(&a.out.join("table.md"), |w| w.write_all(md.as_bytes()))?;
    plots(&a.out, &plan, &runs, &names)?;
    print!("{md}");
    if !a.quiet {
        eprintln!(
            "fwsvm: wrote {}/table.md, results.csv and the plots",
            a.out.display()
        );
    }
    Ok(())
}
