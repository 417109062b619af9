//! Options and helpers shared by subcommands: data format, threads, progress and traces.

use clap::Args;
use fwsvm::data::{Dataset, Format, ReadOptions, read_dataset_noted};
use fwsvm::error::{Error, Result};
use fwsvm::output::OutputFile;
use fwsvm::solver::{Observer, Progress};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A positive finite number (C, ε, seconds…).
pub(super) fn parse_positive(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("expected a positive number, found `{s}`")),
    }
}

/// A time limit of `seconds` (checked positive and finite by its parser or its plan) as a
/// [`Duration`](std::time::Duration): the longest one where the number exceeds its range.
pub(super) fn limit_secs(seconds: f64) -> std::time::Duration {
    fwsvm::solver::SolverParams::time_limit_secs("time limit", seconds)
        .unwrap_or(std::time::Duration::MAX)
}

/// A positive number or `inf` (--rel-eps).
pub(super) fn parse_rel(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number or `inf`, found `{s}`")),
    }
}

/// A whole number ≥ 0 (counts, sizes, seeds), with a message that says so for `-1` or `1.5`.
pub(super) fn parse_count<T: std::str::FromStr>(s: &str) -> std::result::Result<T, String> {
    s.trim()
        .parse::<T>()
        .map_err(|_| format!("expected a whole number ≥ 0, found `{s}`"))
}

/// `--backend` (the library's choice, whose doc comments are the help text).
pub use fwsvm::backend::BackendChoice as BackendArg;

/// Resolves `--backend`/`--device` to an open device (or the CPU) through the library's
/// [`fwsvm::backend::DeviceRequest`], printing what it chose unless `quiet`.
pub fn open_device(
    arg: BackendArg,
    device: Option<&str>,
    precision: fwsvm::backend::cpu::Precision,
    precision_given: bool,
    cache_bytes: Option<usize>,
    quiet: bool,
) -> Result<fwsvm::backend::Device> {
    device_request(arg, device, precision, precision_given, cache_bytes).open(&mut |s| {
        if !quiet {
            eprintln!("fwsvm: {s}");
        }
    })
}

/// The library's device request for these flags.
pub fn device_request(
    arg: BackendArg,
    device: Option<&str>,
    precision: fwsvm::backend::cpu::Precision,
    precision_given: bool,
    cache_bytes: Option<usize>,
) -> fwsvm::backend::DeviceRequest {
    fwsvm::backend::DeviceRequest {
        backend: arg,
        device: device.map(str::to_string),
        precision: precision_given.then_some(precision),
        default_precision: precision,
        cache_bytes,
        local_rank: None,
        loop_place: Default::default(),
    }
}

/// How to read data files.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    /// Input format (files may be plain, gzip, bzip2 or xz: detected from their content).
    #[arg(long, value_enum, default_value_t = Format::Libsvm, help_heading = super::common::OUTPUT)]
    pub format: Format,
    /// CSV: column holding the label (0-based; negative counts from the end, -1 = last).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true, help_heading = super::common::OUTPUT)]
    pub label_col: i64,
}

impl DataArgs {
    /// Reads a dataset with these options; refuses an empty one. What the reader skipped
    /// (svmlight query ids) is said on stderr unless `quiet`.
    pub fn read(&self, path: &Path, quiet: bool) -> Result<Dataset> {
        let opts = ReadOptions {
            format: self.format,
            label_col: self.label_col,
        };
        let (ds, notes) = read_dataset_noted(path, &opts)?;
        if !quiet {
            for n in notes {
                eprintln!("fwsvm: note: {n}");
            }
        }
        if ds.is_empty() {
            return Err(Error::InvalidData {
                path: path.to_path_buf(),
                msg: "no data rows".into(),
            });
        }
        Ok(ds)
    }
}

/// Sets the number of worker threads (0 = one per core). More threads than cores only make
/// them take turns (and 10⁵ of them take minutes to start): such a request is capped at the
/// number of cores, with a note. Only the first call has effect.
///
/// The calling thread (the one that runs the solver) becomes one of the pool's threads, so
/// each parallel pass it starts runs in-worker: it works on its share at once instead of
/// handing the whole pass to the pool and sleeping until it ends. An iteration makes one or
/// two such passes, and the hand-over and wake-up cost tens of µs each, a large share of a
/// short iteration. The price is paid when the machine is oversubscribed: a thread waiting
/// for the other half of a pass spins before it sleeps, so trainings that share the cores with
/// other busy threads (several trainings beside LIBSVM's OpenMP threads, as in
/// `cli/tests/real_data.rs`) run markedly slower.
pub fn set_threads(n: usize, quiet: bool) {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let n = if n > cores {
        if !quiet {
            eprintln!(
                "fwsvm: note: --threads {n} is more than the {cores} cores here; using {cores}"
            );
        }
        cores
    } else {
        n
    };
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .use_current_thread()
        .build_global();
}

/// Physical memory in bytes (Linux: MemTotal of /proc/meminfo), if known.
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuses a `--cache-mb` larger than the machine's memory (the cache would be swapped out or
/// the process killed long into a run).
pub fn check_cache_mb(mb: usize) -> Result<()> {
    let bytes = (mb as u64).saturating_mul(1 << 20);
    if let Some(total) = physical_memory()
        && bytes > total
    {
        return Err(Error::param(format!(
            "--cache-mb {mb}: more than this machine's {} MiB of memory; the kernel cache must \
             fit in RAM (the default is 1024)",
            total >> 20
        )));
    }
    Ok(())
}

/// A progress line on stderr when it is a terminal, refreshed at most 10 times a second.
pub struct ProgressLine {
    bar: indicatif::ProgressBar,
    last: Instant,
    prefix: String,
}

impl ProgressLine {
    /// A spinner when stderr is a terminal and not quiet, else None.
    pub fn new(prefix: String, quiet: bool) -> Option<Self> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {prefix} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_prefix(prefix.clone());
        Some(ProgressLine {
            bar,
            last: Instant::now(),
            prefix,
        })
    }
}

impl Observer for ProgressLine {
    fn observe(&mut self, p: &Progress) {
        if p.iter > 0 && self.last.elapsed().as_millis() < 100 {
            return;
        }
        self.last = Instant::now();
        let _ = &self.prefix;
        self.bar.set_message(format!(
            "iter {}  gap {:.3e}  SVs {}  {:.1}s",
            p.iter, p.gap, p.active, p.seconds
        ));
        self.bar.tick();
    }

    fn finish(&mut self, _result: &fwsvm::solver::SolveResult) {
        self.bar.finish_and_clear();
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// CSV trace: iteration, seconds, f, gap, step kind, step size, active-set size. Written
/// through [`fwsvm::output`]: the file appears, complete, when the run ends.
pub struct Trace {
    out: Option<OutputFile>,
    pair: Option<usize>,
    path: PathBuf,
    error: Option<std::io::Error>,
}

impl Trace {
    /// Opens the file and writes the header.
    pub fn create(path: &Path, multiclass: bool) -> Result<Self> {
        let mut out = OutputFile::create(path)?;
        let head = if multiclass {
            "pair,iteration,seconds,f,gap,step,step_size,active\n"
        } else {
            "iteration,seconds,f,gap,step,step_size,active\n"
        };
        out.write_all(head.as_bytes())
            .map_err(|e| Error::io(path, e))?;
        Ok(Trace {
            out: Some(out),
            pair: if multiclass { Some(0) } else { None },
            path: path.to_path_buf(),
            error: None,
        })
    }

    /// Sets the pair index written in multi-class traces.
    pub fn set_pair(&mut self, p: usize) {
        if self.pair.is_some() {
            self.pair = Some(p);
        }
    }

    /// Reports the first write error, or puts the file in place.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(Error::io(&self.path, e));
        }
        match self.out.take() {
            Some(f) => f.commit(),
            None => Ok(()),
        }
    }
}

impl Trace {
    /// Writes the trace's line of iteration `p` to `w`, with the pair index first in a
    /// multi-class trace.
    pub fn write_line(w: &mut dyn Write, pair: Option<usize>, p: &Progress) -> std::io::Result<()> {
        let (kind, size) = match p.step {
            Some(s) => (s.kind.name(), s.size),
            None => ("init", 0.0),
        };
        if let Some(pair) = pair {
            write!(w, "{pair},")?;
        }
        writeln!(
            w,
            "{},{:.6},{:e},{:e},{kind},{:e},{}",
            p.iter, p.seconds, p.f, p.gap, size, p.active
        )
    }

    /// Writes lines made by [`Trace::write_line`] elsewhere (another rank's pairs).
    #[cfg(feature = "mpi")]
    pub fn write_bytes(&mut self, lines: &[u8]) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.error.is_none()
            && let Err(e) = out.write_all(lines)
        {
            self.error = Some(e);
        }
    }
}

impl Observer for Trace {
    fn observe(&mut self, p: &Progress) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.error.is_none()
            && let Err(e) = Trace::write_line(out, self.pair, p)
        {
            self.error = Some(e);
        }
    }
}

/// Label agreement: (correct, total).
pub fn accuracy(pred: &[f64], truth: &[f64]) -> (usize, usize) {
    let ok = pred.iter().zip(truth).filter(|(a, b)| a == b).count();
    (ok, truth.len())
}

/// svm-predict's accuracy line.
pub fn accuracy_line(correct: usize, total: usize) -> String {
    let pct = if total == 0 {
        0.0
    } else {
        100.0 * correct as f64 / total as f64
    };
    format!(
        "Accuracy = {}% ({correct}/{total}) (classification)",
        crate::fmt::fmt_g(pct, 6)
    )
}

/// Help headings, in the order users reach for them: what to solve, how long, where, and what
/// goes in and out.
pub(super) const PROBLEM: &str = "Problem and kernel";
pub(super) const STOPPING: &str = "Algorithm and stopping";
pub(super) const BACKEND: &str = "Backend";
pub(super) const OUTPUT: &str = "Input and output";
