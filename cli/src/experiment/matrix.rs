//! The papers' evaluation matrix: algorithms × datasets × backends × ε × repeats, each run
//! trained, tested and summed up as a [`Run`] ([`run_matrix`]); [`super::report`] turns the
//! runs into the CSV, the Markdown table with the statistical tests, and the plots.

use fwsvm::backend::Device;
use fwsvm::backend::cpu::{CpuConfig, Precision};
use fwsvm::data::Dataset;
use fwsvm::error::{Error, Result};
use fwsvm::solver::{Algorithm, Observer, Progress, SolverParams, StopReason, StopRule};
use fwsvm::train::{Gamma, KernelKind, PairInfo, TrainParams, stratified_folds, train};
use serde::Deserialize;
use std::path::PathBuf;

/// Backends of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MatrixBackend {
    /// The CPU backend.
    Cpu,
    /// A GPU (any adapter).
    Gpu,
    /// Both, each run on each.
    Both,
}

/// One dataset of the matrix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Name in the tables (default: the training file's stem).
    pub name: Option<String>,
    /// Training file.
    pub train: PathBuf,
    /// Test file (default: a stratified, seeded 70/30 split of the training file).
    pub test: Option<PathBuf>,
    /// C for this dataset (default: the plan's).
    pub c: Option<f64>,
    /// γ for this dataset (default: the plan's).
    pub gamma: Option<f64>,
}

/// The matrix to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Algorithms (columns of the table).
    pub algorithms: Vec<Algorithm>,
    /// Datasets (rows).
    pub datasets: Vec<DatasetSpec>,
    /// Backends.
    pub backend: MatrixBackend,
    /// Tolerances, one table each.
    pub eps: Vec<f64>,
    /// Repeats per cell (seeds seed, seed + 1, …).
    pub repeats: usize,
    /// First seed.
    pub seed: u64,
    /// C unless a dataset says otherwise.
    pub c: f64,
    /// γ unless a dataset says otherwise.
    pub gamma: Gamma,
    /// Kernel.
    pub kernel: KernelKind,
    /// Relative stop rule.
    pub rel_eps: f64,
    /// Randomized iterations (0 = off; FW variants and CVM only).
    pub sample: usize,
    /// Seconds per training.
    pub time_limit: Option<f64>,
}

impl Plan {
    /// Rejects a plan that cannot run, and names every dataset uniquely (a repeated name gets
    /// `@C` or a number appended).
    pub fn check(&mut self) -> Result<()> {
        if let Some(t) = self.time_limit
            && !(t > 0.0 && t.is_finite())
        {
            return Err(Error::param(format!(
                "the time limit must be a positive number of seconds, got {t}"
            )));
        }
        if self.datasets.is_empty() {
            return Err(Error::param(
                "no datasets: the matrix needs at least one (TRAIN[:TEST][@C]) or a config file naming them".into(),
            ));
        }
        if self.repeats == 0 {
            return Err(Error::param("repeats must be at least 1".into()));
        }
        if let Some(e) = self.eps.iter().find(|e| !(**e > 0.0)) {
            return Err(Error::param(format!("-e: {e} is not a positive tolerance")));
        }
        name_datasets(&mut self.datasets);
        Ok(())
    }

    /// The names of the backends the plan runs on, in order.
    pub fn backend_names(&self) -> Vec<&'static str> {
        match self.backend {
            MatrixBackend::Cpu => vec!["cpu"],
            MatrixBackend::Gpu => vec!["gpu"],
            MatrixBackend::Both => vec!["cpu", "gpu"],
        }
    }

    /// Number of runs.
    pub fn total(&self) -> usize {
        self.datasets.len()
            * self.backend_names().len()
            * self.eps.len()
            * self.algorithms.len()
            * self.repeats
    }

    /// The training settings of one run.
    fn params(
        &self,
        spec: &DatasetSpec,
        alg: Algorithm,
        eps: f64,
        seed: u64,
        device: &Device,
        cache_bytes: usize,
    ) -> TrainParams {
        TrainParams {
            kernel: self.kernel,
            gamma: spec.gamma.map_or(self.gamma, Gamma::Value),
            c: spec.c.unwrap_or(self.c),
            solver: SolverParams {
                algorithm: Some(alg),
                eps,
                rel_eps: Some(self.rel_eps),
                time_limit: self.time_limit.map(crate::common::limit_secs),
                seed,
                stop: StopRule::Gap,
                ..SolverParams::default()
            },
            cpu: CpuConfig {
                cache_bytes,
                precision: Some(alg.default_precision()),
                ..CpuConfig::default()
            },
            // simplesvm's α reach C: f64 where the adapter has it, as train.
            device: match alg.default_precision() {
                Precision::F64 => device.with_precision(Precision::F64),
                Precision::F32 => device.clone(),
            },
            sample: if alg == Algorithm::SparseFw || alg == Algorithm::SimpleSvm {
                0
            } else {
                self.sample
            },
            shrink: None,
            ..TrainParams::default()
        }
    }
}

/// One finished run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Dataset name.
    pub dataset: String,
    /// Backend name.
    pub backend: &'static str,
    /// Tolerance.
    pub eps: f64,
    /// Algorithm.
    pub algorithm: Algorithm,
    /// Repeat index (0-based).
    pub repeat: usize,
    /// Seed.
    pub seed: u64,
    /// Solver seconds, summed over class pairs.
    pub seconds: f64,
    /// Certification seconds.
    pub certify: f64,
    /// Iterations, summed over class pairs.
    pub iterations: u64,
    /// Support vectors of the model.
    pub svs: usize,
    /// The largest certified gap over class pairs.
    pub gap: f64,
    /// Objective, summed over class pairs.
    pub objective: f64,
    /// Test accuracy in percent.
    pub accuracy: f64,
    /// Why it stopped (the first pair that did not converge, else converged).
    pub stop: String,
    /// (seconds, gap) of the first pair, thinned (see [`GapTrace`]).
    pub trace: Vec<(f64, f64)>,
}

/// Records (seconds, gap) whenever the gap has fallen by 2 % since the last point (and the
/// first), so a plot keeps its shape in a few hundred points.
pub struct GapTrace(pub std::rc::Rc<std::cell::RefCell<Vec<(f64, f64)>>>);

impl Observer for GapTrace {
    fn observe(&mut self, p: &Progress) {
        let mut v = self.0.borrow_mut();
        match v.last() {
            Some(&(_, g)) if p.gap > 0.98 * g => {}
            _ => v.push((p.seconds, p.gap)),
        }
    }
}

/// The name a dataset goes by in the tables.
pub fn dataset_name(d: &DatasetSpec) -> String {
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

/// The test part of a dataset without a test file: a stratified, seeded 70/30 split.
pub fn split_70_30(ds: &Dataset, seed: u64) -> (Dataset, Dataset) {
    let fold = stratified_folds(&ds.labels, 10, seed);
    let tr: Vec<usize> = (0..ds.len()).filter(|&i| fold[i] < 7).collect();
    let te: Vec<usize> = (0..ds.len()).filter(|&i| fold[i] >= 7).collect();
    (ds.subset(&tr), ds.subset(&te))
}

/// What the caller of [`run_matrix`] supplies: the data, progress display, and what happens
/// after each run (the CLI rewrites its CSV and prints a line).
pub trait MatrixHooks {
    /// Training and test data of a dataset.
    fn load(&mut self, spec: &DatasetSpec) -> Result<(Dataset, Dataset)>;
    /// Observers for the run that `label` describes (`[k/total] dataset algorithm ε backend #r`).
    fn observers(&mut self, _label: &str) -> Vec<Box<dyn Observer>> {
        Vec::new()
    }
    /// Called after run `k` of `total`; `runs` holds every run so far (the last is new).
    fn finished(&mut self, _k: usize, _total: usize, _runs: &[Run]) -> Result<()> {
        Ok(())
    }
}

/// Runs the plan (checked by [`Plan::check`]) on `backends` (name, device; in the order of
/// [`Plan::backend_names`]); Ctrl-C ends it with [`Error::Interrupted`] after the run in
/// progress, the finished ones having reached [`MatrixHooks::finished`].
pub fn run_matrix(
    plan: &Plan,
    backends: &[(&'static str, Device)],
    cache_bytes: usize,
    hooks: &mut dyn MatrixHooks,
) -> Result<Vec<Run>> {
    let total = plan.total();
    let mut runs: Vec<Run> = Vec::new();
    let mut k = 0;
    for spec in &plan.datasets {
        let name = dataset_name(spec);
        let (train_ds, test_ds) = hooks.load(spec)?;
        for (bname, device) in backends {
            for &eps in &plan.eps {
                for &alg in &plan.algorithms {
                    for rep in 0..plan.repeats {
                        k += 1;
                        let seed = plan.seed + rep as u64;
                        let params = plan.params(spec, alg, eps, seed, device, cache_bytes);
                        let label =
                            format!("[{k}/{total}] {name} {alg} ε={eps:e} {bname} #{}", rep + 1);
                        let trace = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
                        let mut obs = |info: &PairInfo| -> Vec<Box<dyn Observer>> {
                            let mut v = hooks.observers(&label);
                            if info.index == 0 {
                                v.push(Box::new(GapTrace(trace.clone())));
                            }
                            v
                        };
                        let (model, reports) = train(&train_ds, &params, &mut obs)?;
                        if fwsvm::interrupt::requested() {
                            return Err(Error::Interrupted(format!(
                                "the bench stopped during run {k} of {total}; {} finished \
                                 run(s) kept",
                                runs.len()
                            )));
                        }
                        let accuracy = super::test_accuracy(device, &model, &test_ds)?;
                        let stop = reports
                            .iter()
                            .map(|r| r.result.stop)
                            .find(|s| *s != StopReason::Converged)
                            .unwrap_or(StopReason::Converged);
                        runs.push(Run {
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
                            accuracy,
                            stop: stop.to_string(),
                            trace: trace.borrow().clone(),
                        });
                        hooks.finished(k, total, &runs)?;
                    }
                }
            }
        }
    }
    Ok(runs)
}
