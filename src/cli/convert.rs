//! `fwsvm convert`.

use crate::data::kdd::{convert_kdd99, convert_kdd99_all};
use crate::error::Result;
use crate::output::RunFiles;
use clap::Subcommand;
use std::path::PathBuf;

/// Conversions.
#[derive(Debug, Subcommand)]
pub enum ConvertCommand {
    /// KDD Cup 99 raw CSV (e.g. kddcup.data_10_percent.gz) → the papers' binary set:
    /// drops protocol_type, service and flag (38 numeric features), `normal.` = +1, attacks = −1,
    /// seeded random split into <OUT_PREFIX>.train and <OUT_PREFIX>.test.
    Kdd99 {
        /// Raw file (plain or compressed).
        raw: PathBuf,
        /// Output prefix: writes <OUT_PREFIX>.train and <OUT_PREFIX>.test.
        out_prefix: PathBuf,
        /// Seed of the shuffle.
        #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
        seed: u64,
        /// Fraction of rows in the test file (0.2 gives 395,216 / 98,805 rows on the 10 % set).
        #[arg(long, default_value_t = 0.2)]
        test_fraction: f64,
        /// Convert every row, in file order, to <OUT_PREFIX>.train only (for the `corrected` test set).
        #[arg(long, conflicts_with_all = ["seed", "test_fraction"])]
        all: bool,
    },
}

/// Runs `fwsvm convert`.
pub fn run(c: ConvertCommand) -> Result<()> {
    match c {
        ConvertCommand::Kdd99 {
            raw,
            out_prefix,
            seed,
            test_fraction,
            all,
        } => {
            let with = |suffix: &str| {
                let mut s = out_prefix.clone().into_os_string();
                s.push(suffix);
                PathBuf::from(s)
            };
            let mut files = RunFiles::new();
            files
                .input("raw data", &raw)
                .output("training output", &with(".train"));
            if !all && test_fraction > 0.0 {
                files.output("test output", &with(".test"));
            }
            files.check()?;
            let summary = if all {
                convert_kdd99_all(&raw, &with(".train"))?
            } else {
                convert_kdd99(&raw, &out_prefix, seed, test_fraction)?
            };
            eprintln!(
                "fwsvm: {} rows, {} features",
                summary.total_rows, summary.n_features
            );
            eprintln!("  {}", summary.train);
            if let Some(t) = &summary.test {
                eprintln!("  {t}");
            }
            Ok(())
        }
    }
}
