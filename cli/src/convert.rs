//! `fwsvm convert`.

use clap::Subcommand;
use fwsvm::data::kdd::{convert_kdd99, convert_kdd99_all};
use fwsvm::error::{Error, Result};
use fwsvm::output::RunFiles;
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
    /// LIBSVM data with its feature indices renumbered 1, 2, … over the indices it uses (any
    /// index up to 2³² − 1 is read): for files whose highest index needs more per-feature
    /// memory than training allows. Writes the map (`new old`, one line per feature) with
    /// --map; --apply MAP renumbers a test file the same way (features the map lacks follow
    /// its numbers: they enter only the rows' norms, as in LIBSVM).
    Renumber {
        /// LIBSVM file (plain or compressed).
        input: PathBuf,
        /// Renumbered LIBSVM file.
        output: PathBuf,
        /// Write the map of this renumbering here.
        #[arg(
            long,
            value_name = "MAP",
            required_unless_present = "apply",
            conflicts_with = "apply"
        )]
        map: Option<PathBuf>,
        /// Renumber with the map of an earlier renumbering (the training file's).
        #[arg(long, value_name = "MAP")]
        apply: Option<PathBuf>,
    },
}

/// The map of a renumbering: old 0-based indices by new index, from `new old` lines (1-based).
fn read_map(path: &std::path::Path) -> Result<Vec<u32>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut old = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |msg: String| Error::Parse {
            path: path.to_path_buf(),
            line: n + 1,
            msg,
        };
        let mut t = line.split_whitespace();
        let (Some(a), Some(b), None) = (t.next(), t.next(), t.next()) else {
            return Err(bad(format!("expected `new old`, found `{line}`")));
        };
        let new: usize = a.parse().map_err(|_| bad(format!("bad new index `{a}`")))?;
        if new != old.len() + 1 {
            return Err(bad(format!(
                "new index {new} where {} was expected (the map lists 1, 2, … in order)",
                old.len() + 1
            )));
        }
        let o: u32 = b
            .parse()
            .ok()
            .filter(|&o| o >= 1)
            .ok_or_else(|| bad(format!("bad old index `{b}`: 1 to 4294967295")))?;
        old.push(o - 1);
    }
    Ok(old)
}

/// Runs `fwsvm convert`.
pub fn run(c: ConvertCommand) -> Result<()> {
    match c {
        ConvertCommand::Renumber {
            input,
            output,
            map,
            apply,
        } => {
            let mut files = RunFiles::new();
            files
                .input("data", &input)
                .input_opt("map", apply.as_deref())
                .output("renumbered data", &output)
                .output_opt("map", map.as_deref());
            files.check()?;
            let given = apply.as_deref().map(read_map).transpose()?;
            let (ds, old) = fwsvm::data::renumber_features(&input, given.as_deref())?;
            fwsvm::output::write_output(&output, |w| fwsvm::data::write_libsvm(w, &ds))?;
            if let Some(m) = &map {
                fwsvm::output::write_output(m, |w| {
                    use std::io::Write;
                    let mut w = std::io::BufWriter::new(w);
                    for (k, &o) in old.iter().enumerate() {
                        writeln!(w, "{} {}", k + 1, o as u64 + 1)?;
                    }
                    w.flush()
                })?;
            }
            let kept = given.as_ref().map_or(0, Vec::len);
            if kept == 0 {
                eprintln!(
                    "fwsvm: {} rows; their {} features renumbered 1 to {}",
                    ds.len(),
                    old.len(),
                    old.len()
                );
            } else {
                eprintln!(
                    "fwsvm: {} rows; the map's {kept} features keep their numbers, {} others \
                     numbered {} to {}",
                    ds.len(),
                    old.len() - kept,
                    kept + 1,
                    old.len()
                );
            }
            Ok(())
        }
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
