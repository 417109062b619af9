//! `fwsvm predict`.

use super::common::{DataArgs, accuracy, accuracy_line, set_threads};
use super::train::BackendArg;
use crate::error::Result;
use crate::model::{Model, write_atomically};
use clap::Args;
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
    /// Compute backend. Accepted for scripts: prediction currently always runs on the CPU.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendArg,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Print only errors and the accuracy line.
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    data: DataArgs,
}

/// Runs `fwsvm predict`.
pub fn run(a: PredictArgs) -> Result<()> {
    set_threads(a.threads);
    let model = Model::load(&a.model)?;
    let ds = a.data.read(&a.test)?;
    if ds.n_features() > model.n_features() && !a.quiet {
        eprintln!(
            "fwsvm: warning: {} has features beyond index {} that no support vector uses \
             (they enter only the norms of the RBF distance, as in LIBSVM)",
            a.test.display(),
            model.n_features()
        );
    }
    let (pred, dec) = model.predict_with_decisions(&ds);
    if let Some(out) = &a.output {
        write_atomically(out, |w| {
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
        })?;
    }
    let (ok, n) = accuracy(&pred, &ds.labels);
    println!("{}", accuracy_line(ok, n));
    Ok(())
}
