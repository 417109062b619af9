//! `fwsvm predict`.

use super::common::{DataArgs, accuracy, accuracy_line, open_device, set_threads};
use super::train::BackendArg;
use clap::Args;
use fwsvm::error::Result;
use fwsvm::model::Model;
use fwsvm::output::{OutputFile, RunFiles};
use std::io::Write;
use std::path::PathBuf;

/// Options of `fwsvm predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Data to classify (labels are compared with the predictions for the accuracy line).
    test: PathBuf,
    /// Model file (LIBSVM format; written by fwsvm or LIBSVM).
    model: PathBuf,
    /// Where to write one predicted label per line.
    output: Option<PathBuf>,
    /// Add the decision values (one per class pair) after each label.
    #[arg(long)]
    decision_values: bool,
    /// Compute backend: auto = a hardware GPU when there is one and the test set is large
    /// (rows × SVs ≥ 2·10⁷), else the CPU; gpu = any adapter, always; cpu.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// GPU adapter: an index or part of a name, as `fwsvm info` lists them.
    #[arg(long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// Precision of the kernel values and sums on the GPU [default: f64 where the adapter has
    /// SHADER_F64, else f32].
    #[arg(long, value_enum)]
    precision: Option<fwsvm::backend::cpu::Precision>,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// Probability outputs (svm-predict's -b 1; the model must carry probA/probB, from
    /// `train -b 1` or LIBSVM): a `labels …` header, then each label with one probability per
    /// class; the label is the most probable class.
    #[arg(short = 'b', long, value_name = "0|1", default_value = "0",
          value_parser = super::train::parse_01, action = clap::ArgAction::Set,
          conflicts_with = "decision_values")]
    probability: bool,
    /// Print only errors and the accuracy line.
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    data: DataArgs,
}

/// Runs `fwsvm predict`.
pub fn run(a: PredictArgs) -> Result<()> {
    set_threads(a.threads, a.quiet);
    RunFiles::new()
        .input("test data", &a.test)
        .input("model", &a.model)
        .output_opt("predictions file", a.output.as_deref())
        .check()?;
    let model = Model::load(&a.model)?;
    let ds = a.data.read(&a.test, a.quiet)?;
    if ds.n_features() > model.n_features() && !a.quiet {
        eprintln!(
            "fwsvm: warning: {} has features beyond index {} that no support vector uses \
             (they enter only the norms of the RBF distance, as in LIBSVM)",
            a.test.display(),
            model.n_features()
        );
    }
    let precision = a.precision;
    let work = (ds.len() as u64).saturating_mul(model.total_sv() as u64);
    let device = if a.backend == BackendArg::Auto && work < fwsvm::backend::GPU_PREDICT_MIN_WORK {
        fwsvm::backend::Device::Cpu
    } else {
        open_device(
            a.backend,
            a.device.as_deref(),
            precision.unwrap_or_default(),
            precision.is_some(),
            Some(0),
            a.quiet,
        )?
    };
    let min_work = if a.backend == BackendArg::Auto {
        fwsvm::backend::GPU_PREDICT_MIN_WORK
    } else {
        0
    };
    if a.probability && !model.has_probabilities() {
        return Err(fwsvm::error::Error::param(format!(
            "-b 1: {} has no probability information (probA/probB); train it with -b 1",
            a.model.display()
        )));
    }
    // Labels alone go through the screened prediction; decision values and probabilities
    // need every decision value in f64.
    let (mut pred, dec) = if a.probability || a.decision_values {
        fwsvm::predict::on_device(&device, &model, &ds, min_work, precision)?
    } else {
        let labels = fwsvm::predict::labels_on_device(&device, &model, &ds, min_work, precision)?;
        let none = vec![Vec::new(); labels.len()];
        (labels, none)
    };
    let probs = if a.probability {
        let (labels, probs) = model.probabilities_from_decisions(&dec);
        pred = labels;
        Some(probs)
    } else {
        None
    };
    let mut to_stdout = false;
    if let Some(out) = &a.output {
        let mut w = OutputFile::create(out)?;
        to_stdout = w.is_stdout();
        let body = |w: &mut OutputFile| -> std::io::Result<()> {
            if let Some(probs) = &probs {
                write!(w, "labels")?;
                for l in &model.labels {
                    write!(w, " {l}")?;
                }
                writeln!(w)?;
                for (p, pr) in pred.iter().zip(probs) {
                    write!(w, "{p}")?;
                    for v in pr {
                        write!(w, " {v}")?;
                    }
                    writeln!(w)?;
                }
                return Ok(());
            }
            for (p, d) in pred.iter().zip(&dec) {
                if a.decision_values {
                    write!(w, "{p}")?;
                    for v in d {
                        write!(w, " {v}")?;
                    }
                    writeln!(w)?;
                } else {
                    writeln!(w, "{p}")?;
                }
            }
            Ok(())
        };
        body(&mut w).map_err(|e| fwsvm::error::Error::io(out, e))?;
        w.commit()?;
    }
    let (ok, n) = accuracy(&pred, &ds.labels);
    // With the predictions on standard output, the accuracy line goes to standard error.
    if to_stdout {
        eprintln!("{}", accuracy_line(ok, n));
    } else {
        println!("{}", accuracy_line(ok, n));
    }
    Ok(())
}
