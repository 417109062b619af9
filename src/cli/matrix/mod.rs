//! `fwsvm bench` (no subcommand): the papers' evaluation as one command — a matrix of
//! algorithms × datasets × backends × ε × repeats, written as a Markdown table in the layout
//! of paper 004's Table 2 (time, speed-up over FW, iterations, SVs, gap, accuracy), a CSV,
//! SVG plots (duality gap against seconds per variant; speed-up of each variant over fw) and,
//! with three datasets or more, paper 000's tests: Friedman with the Iman–Davenport correction
//! and pairwise Wilcoxon signed-rank tests with exact p-values, on time and on accuracy.

mod report;

use super::common::{BackendArg, DataArgs, ProgressLine, open_device, set_threads};
use super::train::parse_gamma;
use crate::backend::Device;
use crate::backend::cpu::{CpuConfig, Precision};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::output::{RunFiles, write_output};
use crate::solver::{Algorithm, Observer, Progress, SolverParams, StopRule};
use crate::train::{Gamma, KernelKind, PairInfo, TrainParams, stratified_folds, train};
use clap::{Args, ValueEnum};
use report::{plots, report, write_csv};
use serde::Deserialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// Backends of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatrixBackend {
    /// The CPU backend.
    Cpu,
    /// A GPU (any adapter).
    Gpu,
    /// Both, each run on each.
    Both,
}

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
    /// A TOML file describing the matrix (see README); it replaces the matrix flags.
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

/// One dataset of the matrix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DatasetSpec {
    name: Option<String>,
    train: PathBuf,
    test: Option<PathBuf>,
    c: Option<f64>,
    gamma: Option<f64>,
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

/// The matrix to run.
struct Plan {
    algorithms: Vec<Algorithm>,
    datasets: Vec<DatasetSpec>,
    backend: MatrixBackend,
    eps: Vec<f64>,
    repeats: usize,
    seed: u64,
    c: f64,
    gamma: Gamma,
    kernel: KernelKind,
    rel_eps: f64,
    sample: usize,
    time_limit: Option<f64>,
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

/// One finished run.
#[derive(Debug, Clone)]
struct Run {
    dataset: String,
    backend: &'static str,
    eps: f64,
    algorithm: Algorithm,
    repeat: usize,
    seed: u64,
    seconds: f64,
    certify: f64,
    iterations: u64,
    svs: usize,
    gap: f64,
    objective: f64,
    accuracy: f64,
    stop: String,
    trace: Vec<(f64, f64)>,
}

/// Records (seconds, gap) whenever the gap has fallen by 2 % since the last point (and the
/// first), so a plot keeps its shape in a few hundred points.
struct GapTrace(std::rc::Rc<std::cell::RefCell<Vec<(f64, f64)>>>);

impl Observer for GapTrace {
    fn observe(&mut self, p: &Progress) {
        let mut v = self.0.borrow_mut();
        match v.last() {
            Some(&(_, g)) if p.gap > 0.98 * g => {}
            _ => v.push((p.seconds, p.gap)),
        }
    }
}

fn dataset_name(d: &DatasetSpec) -> String {
    if let Some(n) = &d.name {
        return n.clone();
    }
    let stem = d
        .train
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".into());
    // ijcnn1.trn.bz2 → ijcnn1
    stem.split('.').next().unwrap_or(&stem).to_string()
}

/// Gives every dataset a unique name (a repeated one gets `@C` or a number appended).
fn name_datasets(datasets: &mut [DatasetSpec]) {
    let mut seen: Vec<String> = Vec::new();
    for d in datasets.iter_mut() {
        let base = dataset_name(d);
        let mut name = base.clone();
        if seen.contains(&name) {
            if let Some(c) = d.c {
                name = format!("{base}@{c}");
            }
            let mut k = 2;
            while seen.contains(&name) {
                name = format!("{base}-{k}");
                k += 1;
            }
        }
        seen.push(name.clone());
        d.name = Some(name);
    }
}

/// Runs the matrix.
pub fn run(a: MatrixArgs) -> Result<()> {
    set_threads(a.threads, a.quiet);
    super::common::check_cache_mb(a.cache_mb)?;
    let mut plan = a.plan()?;
    name_datasets(&mut plan.datasets);
    if let Some(t) = plan.time_limit
        && !(t > 0.0 && t.is_finite())
    {
        return Err(Error::param(format!(
            "the time limit must be a positive number of seconds, got {t}"
        )));
    }
    if plan.datasets.is_empty() {
        return Err(Error::param(
            "no datasets: give --datasets TRAIN[:TEST][@C],… or --config FILE (or a subcommand: `fwsvm bench kernels`)".into(),
        ));
    }
    if plan.repeats == 0 {
        return Err(Error::param("--repeats must be at least 1".into()));
    }
    if let Some(e) = plan.eps.iter().find(|e| !(**e > 0.0)) {
        return Err(Error::param(format!("-e: {e} is not a positive tolerance")));
    }
    let mut files = RunFiles::new();
    files.input_opt("configuration", a.config.as_deref());
    for d in &plan.datasets {
        files
            .input("training data", &d.train)
            .input_opt("test data", d.test.as_deref());
    }
    files
        .output("results CSV", &a.out.join("results.csv"))
        .output("table", &a.out.join("table.md"));
    let bnames: Vec<&str> = match plan.backend {
        MatrixBackend::Cpu => vec!["cpu"],
        MatrixBackend::Gpu => vec!["gpu"],
        _ => vec!["cpu", "gpu"],
    };
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
    if plan.backend != MatrixBackend::Gpu {
        backends.push(("cpu", Device::Cpu));
    }
    if plan.backend != MatrixBackend::Cpu {
        let dev = open_device(
            BackendArg::Gpu,
            a.device.as_deref(),
            Precision::F32,
            false,
            a.cache_mb << 20,
            a.quiet,
        )?;
        backends.push(("gpu", dev));
    }
    let total = plan.datasets.len()
        * backends.len()
        * plan.eps.len()
        * plan.algorithms.len()
        * plan.repeats;
    let mut runs: Vec<Run> = Vec::new();
    let mut k = 0;
    for spec in &plan.datasets {
        let name = dataset_name(spec);
        let (train_ds, test_ds) = load(spec, &a.data, plan.seed)?;
        for (bname, device) in &backends {
            for &eps in &plan.eps {
                for &alg in &plan.algorithms {
                    for rep in 0..plan.repeats {
                        k += 1;
                        let seed = plan.seed + rep as u64;
                        let params = TrainParams {
                            kernel: plan.kernel,
                            gamma: spec.gamma.map_or(plan.gamma, Gamma::Value),
                            coef0: 0.0,
                            degree: 3,
                            c: spec.c.unwrap_or(plan.c),
                            class_weights: Vec::new(),
                            sample_weights: None,
                            one_class: false,
                            solver: SolverParams {
                                algorithm: alg,
                                eps,
                                rel_eps: plan.rel_eps,
                                time_limit: plan.time_limit.map(Duration::from_secs_f64),
                                seed,
                                stop: StopRule::Gap,
                                ..SolverParams::default()
                            },
                            cpu: CpuConfig {
                                cache_bytes: a.cache_mb << 20,
                                precision: if alg == Algorithm::SimpleSvm {
                                    Precision::F64
                                } else {
                                    Precision::F32
                                },
                            },
                            // simplesvm's α reach C: f64 where the adapter has it, as train.
                            device: if alg == Algorithm::SimpleSvm {
                                device.with_precision(Precision::F64)
                            } else {
                                device.clone()
                            },
                            sample: if alg == Algorithm::SparseFw || alg == Algorithm::SimpleSvm {
                                0
                            } else {
                                plan.sample
                            },
                            shrink: None,
                        };
                        let trace = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
                        let label =
                            format!("[{k}/{total}] {name} {alg} ε={eps:e} {bname} #{}", rep + 1);
                        let quiet = a.quiet;
                        let tr = trace.clone();
                        let mut obs = move |info: &PairInfo| -> Vec<Box<dyn Observer>> {
                            let mut v: Vec<Box<dyn Observer>> = Vec::new();
                            if let Some(p) = ProgressLine::new(label.clone(), quiet) {
                                v.push(Box::new(p));
                            }
                            if info.index == 0 {
                                v.push(Box::new(GapTrace(tr.clone())));
                            }
                            v
                        };
                        let (model, reports) = train(&train_ds, &params, &mut obs)?;
                        if crate::interrupt::requested() {
                            return Err(Error::Interrupted(format!(
                                "the bench stopped during run {k} of {total}; {} finished \
                                 run(s) are in {}",
                                runs.len(),
                                a.out.join("results.csv").display()
                            )));
                        }
                        let (pred, _) = crate::predict::on_device(
                            device,
                            &model,
                            &test_ds,
                            crate::backend::GPU_PREDICT_MIN_WORK,
                            None,
                        )?;
                        let correct = pred
                            .iter()
                            .zip(&test_ds.labels)
                            .filter(|(p, y)| p == y)
                            .count();
                        let stop = reports
                            .iter()
                            .map(|r| r.result.stop)
                            .find(|s| *s != crate::solver::StopReason::Converged)
                            .unwrap_or(crate::solver::StopReason::Converged);
                        let run = Run {
                            dataset: name.clone(),
                            backend: bname,
                            eps,
                            algorithm: alg,
                            repeat: rep,
                            seed,
                            seconds: reports.iter().map(|r| r.result.seconds).sum(),
                            certify: reports.iter().map(|r| r.result.certify_seconds).sum(),
                            iterations: reports.iter().map(|r| r.result.iterations).sum(),
                            svs: model.total_sv(),
                            gap: reports
                                .iter()
                                .map(|r| r.result.certified_gap.unwrap_or(r.result.gap))
                                .fold(0.0, f64::max),
                            objective: reports
                                .iter()
                                .map(|r| r.result.certified_f.unwrap_or(r.result.f))
                                .sum(),
                            accuracy: 100.0 * correct as f64 / test_ds.len().max(1) as f64,
                            stop: stop.to_string(),
                            trace: trace.borrow().clone(),
                        };
                        if !a.quiet {
                            eprintln!(
                                "fwsvm: [{k}/{total}] {name} {alg} ε={eps:e} {bname} #{}: {:.2}s, {} iterations, {} SVs, gap {:.2e}, {:.2} %",
                                rep + 1,
                                run.seconds,
                                run.iterations,
                                run.svs,
                                run.gap,
                                run.accuracy
                            );
                        }
                        runs.push(run);
                        write_csv(&a.out.join("results.csv"), &runs)?;
                    }
                }
            }
        }
    }
    let md = report(
        &plan,
        &runs,
        &backends.iter().map(|b| b.0).collect::<Vec<_>>(),
    );
    write_output(&a.out.join("table.md"), |w| w.write_all(md.as_bytes()))?;
    plots(
        &a.out,
        &plan,
        &runs,
        &backends.iter().map(|b| b.0).collect::<Vec<_>>(),
    )?;
    print!("{md}");
    if !a.quiet {
        eprintln!(
            "fwsvm: wrote {}/table.md, results.csv and the plots",
            a.out.display()
        );
    }
    Ok(())
}

/// Training and test data of a spec: the files, or a stratified seeded 70/30 split.
fn load(spec: &DatasetSpec, data: &DataArgs, seed: u64) -> Result<(Dataset, Dataset)> {
    let ds = data.read(&spec.train)?;
    if let Some(t) = &spec.test {
        return Ok((ds, data.read(t)?));
    }
    let fold = stratified_folds(&ds.labels, 10, seed);
    let tr: Vec<usize> = (0..ds.len()).filter(|&i| fold[i] < 7).collect();
    let te: Vec<usize> = (0..ds.len()).filter(|&i| fold[i] >= 7).collect();
    Ok((ds.subset(&tr), ds.subset(&te)))
}
