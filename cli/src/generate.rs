//! `fwsvm gen`: synthetic datasets.

use clap::Subcommand;
use fwsvm::data::synth::write_checkerboard;
use fwsvm::error::{Error, Result};
use fwsvm::output::write_output;
use std::path::PathBuf;

/// Bytes of a checkerboard row in the file, on average (`+1 1:1.4178377 2:0.73831475`: 25–28
/// with any board), so that a file that cannot fit is refused before it fills the disk.
const ROW_BYTES: u64 = 25;

/// `n` bytes in the unit that reads best (GB, TB, PB).
fn bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e15 => format!("{:.1} PB", n / 1e15),
        n if n >= 1e12 => format!("{:.1} TB", n / 1e12),
        n if n >= 1e9 => format!("{:.1} GB", n / 1e9),
        n => format!("{:.1} MB", n / 1e6),
    }
}

/// Generators.
#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// The CVM papers' checkerboard (scale tests): points uniform on [0, K)², +1 where
    /// ⌊x⌋ + ⌊y⌋ is even, −1 where odd; LIBSVM format, seeded.
    Checkerboard {
        /// Number of rows.
        #[arg(long, value_parser = super::common::parse_count::<u64>)]
        rows: u64,
        /// Seed (the same seed gives the same file).
        #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
        seed: u64,
        /// Squares per side K.
        #[arg(long, default_value_t = 4, value_parser = super::common::parse_count::<u32>)]
        board: u32,
        /// Flip each label with this probability (0 to 0.5): label noise makes the problem
        /// non-separable, with a support that grows with the rows.
        #[arg(long, default_value_t = 0.0)]
        noise: f64,
        /// Output file (written atomically).
        out: PathBuf,
    },
}

/// Runs `fwsvm gen`.
pub fn run(c: GenCommand) -> Result<()> {
    match c {
        GenCommand::Checkerboard {
            rows,
            seed,
            board,
            noise,
            out,
        } => {
            if !(0.0..=0.5).contains(&noise) {
                return Err(Error::param(format!(
                    "--noise must be between 0 and 0.5, got {noise}"
                )));
            }
            if rows == 0 {
                return Err(Error::param("--rows must be at least 1".into()));
            }
            if !(1..=1 << 20).contains(&board) {
                return Err(Error::param(format!(
                    "--board must be between 1 and 1048576, got {board}"
                )));
            }
            let need = rows.saturating_mul(ROW_BYTES);
            if let Some(free) = fwsvm::output::free_bytes(&out)
                && need > free
            {
                return Err(Error::param(format!(
                    "--rows {rows} would write about {} to {}, which has {} free",
                    bytes(need),
                    out.display(),
                    bytes(free)
                )));
            }
            write_output(&out, |w| write_checkerboard(w, rows, board, seed, noise))
        }
    }
}
