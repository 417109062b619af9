//! `fwsvm scale`: min-max scaling like svm-scale, with its parameter-file format.

use super::common::DataArgs;
use clap::Args;
use fwsvm::data::scale::ScaleParams;
use fwsvm::data::write_libsvm;
use fwsvm::error::{Error, Result};
use fwsvm::output::{RunFiles, write_output};
use std::path::PathBuf;

/// Options of `fwsvm scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Data to scale.
    data_file: PathBuf,
    /// Where to write the scaled data (LIBSVM format) [default: standard output].
    output: Option<PathBuf>,
    /// Lower end of the target range.
    #[arg(short = 'l', long, default_value_t = -1.0, allow_hyphen_values = true)]
    lower: f64,
    /// Upper end of the target range.
    #[arg(short = 'u', long, default_value_t = 1.0, allow_hyphen_values = true)]
    upper: f64,
    /// Save the fitted ranges to this file (svm-scale's format).
    #[arg(short = 's', long, conflicts_with = "restore")]
    save: Option<PathBuf>,
    /// Apply ranges saved earlier (e.g. fitted on the training set) instead of fitting.
    #[arg(short = 'r', long)]
    restore: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

/// Runs `fwsvm scale`.
pub fn run(a: ScaleArgs) -> Result<()> {
    if !(a.lower < a.upper) {
        return Err(Error::param(format!(
            "lower ({}) must be below upper ({})",
            a.lower, a.upper
        )));
    }
    RunFiles::new()
        .input("data", &a.data_file)
        .input_opt("ranges file", a.restore.as_deref())
        .output_opt("ranges file", a.save.as_deref())
        .output_opt("output", a.output.as_deref())
        .check()?;
    let mut ds = a.data.read(&a.data_file, false)?;
    let params = match &a.restore {
        Some(p) => ScaleParams::load(p)?,
        None => ScaleParams::fit(&ds, a.lower, a.upper)?,
    };
    if let Some(p) = &a.save {
        params.save(p)?;
    }
    params.apply(&mut ds);
    match &a.output {
        Some(out) => write_output(out, |w| write_libsvm(w, &ds))?,
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            write_libsvm(&mut w, &ds).map_err(|e| Error::io("<stdout>", e))?;
            std::io::Write::flush(&mut w).map_err(|e| Error::io("<stdout>", e))?;
        }
    }
    Ok(())
}
