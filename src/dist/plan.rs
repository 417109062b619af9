//! Rows or tasks: how a cross-validation or a grid search uses the ranks.
//!
//! Splitting the rows makes every iteration a few collectives (the counts of
//! [`super::comm::Traffic`]: about seven messages per iteration), which pays when a column pass
//! over m/P rows costs more than their latency — large data — or when the data do not fit one
//! machine. Independent tasks (the folds of a cross-validation, the grid's points × folds) need
//! no message at all while they run: when the whole data fit every rank's share of memory and
//! there are at least as many tasks as ranks, every rank gets all the rows (one broadcast per
//! rank, once) and trains whole tasks on them, exactly as one process would. That is the
//! choice by default; `--distribute rows|tasks` overrides it.

use super::comm::Comm;
use super::slice::RowSlice;
use crate::data::{Dataset, OwnedRow};
use crate::error::{Error, Result};

/// How the ranks share a set of independent trainings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Distribute {
    /// Tasks when the data fit every rank and the tasks keep every rank busy, else rows.
    Auto,
    /// Every training over all ranks, each holding its slice of the rows.
    Rows,
    /// Whole trainings assigned to ranks, each rank holding every row.
    Tasks,
}

/// The plan chosen and why, for the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Rows or tasks (never Auto).
    pub plan: Distribute,
    /// One sentence for the user.
    pub why: String,
}

/// Bytes the whole data take in memory, from every rank's slice (collective).
pub fn data_bytes(comm: &dyn Comm, local: &Dataset) -> Result<u64> {
    let mine = crate::backend::column_pass_bytes(local) + 8 * local.len() as u64;
    Ok(comm.gather_all(mine)?.iter().sum())
}

/// Available memory of this machine (MemAvailable) over the ranks that share it, in bytes;
/// None where it cannot be read.
pub fn memory_share() -> Option<u64> {
    let kb = crate::util::mem_available()? / 1024;
    let local = [
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        "MV2_COMM_WORLD_LOCAL_SIZE",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse::<u64>().ok())
    .unwrap_or(1)
    .max(1);
    Some(kb * 1024 / local)
}

/// Chooses rows or tasks for `tasks` independent trainings (`what`: "folds", "grid points ×
/// folds") over the data every rank holds a slice of; collective, every rank gets the same
/// choice.
pub fn choose(
    comm: &dyn Comm,
    local: &Dataset,
    tasks: usize,
    what: &str,
    asked: Distribute,
) -> Result<Choice> {
    let bytes = data_bytes(comm, local)?;
    // The smallest share over the ranks (0 where unknown: then only rows are safe).
    let share = comm
        .gather_all(memory_share().unwrap_or(0))?
        .into_iter()
        .min()
        .unwrap_or(0);
    let p = comm.size();
    let mb = |b: u64| match b {
        0..1_000_000 => format!("{:.0} kB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.0} MB", b as f64 / 1e6),
        _ => format!("{:.1} GB", b as f64 / 1e9),
    };
    Ok(match asked {
        Distribute::Rows => Choice {
            plan: Distribute::Rows,
            why: "every training is split over the ranks by rows, as distribute = rows asks".into(),
        },
        Distribute::Tasks => Choice {
            plan: Distribute::Tasks,
            why: format!(
                "the {tasks} {what} go to the ranks whole, each rank holding all {} of data, \
                 as distribute = tasks asks",
                mb(bytes)
            ),
        },
        // Half the share: the data plus the training's own memory (caches, gradients).
        Distribute::Auto if 2 * bytes > share => Choice {
            plan: Distribute::Rows,
            why: format!(
                "every training is split over the ranks by rows: the data ({}) do not fit half \
                 of a rank's share of memory ({})",
                mb(bytes),
                mb(share)
            ),
        },
        Distribute::Auto if tasks < p => Choice {
            plan: Distribute::Rows,
            why: format!(
                "every training is split over the ranks by rows: {tasks} {what} cannot keep {p} \
                 ranks busy"
            ),
        },
        Distribute::Auto => Choice {
            plan: Distribute::Tasks,
            why: format!(
                "the {tasks} {what} go to the ranks whole: the data ({}) fit every rank's share \
                 of memory ({}), and a whole training exchanges no message while split rows \
                 exchange several per iteration",
                mb(bytes),
                mb(share)
            ),
        },
    })
}

/// Every rank's rows on every rank, in global order: the dataset one process reads (the
/// slices share the whole file's layout). One broadcast per rank. Collective.
pub fn gather_dataset(comm: &dyn Comm, local: &Dataset, slice: &RowSlice) -> Result<Dataset> {
    let mut all = local.subset(&[]);
    let write = |buf: &mut Vec<u8>| {
        buf.extend_from_slice(&(local.len() as u64).to_le_bytes());
        for i in 0..local.len() {
            buf.extend_from_slice(&local.labels[i].to_le_bytes());
            OwnedRow::from(local.row(i)).to_bytes(buf);
        }
    };
    let read = |buf: &[u8], _: &mut Vec<()>| -> bool {
        let word = |at: usize| -> Option<[u8; 8]> { buf.get(at..at + 8)?.try_into().ok() };
        let Some(n) = word(0).map(|w| u64::from_le_bytes(w) as usize) else {
            return false;
        };
        let (mut rows, mut labels) = (Vec::new(), Vec::new());
        let mut at = 8;
        for _ in 0..n {
            let Some(y) = word(at) else { return false };
            labels.push(f64::from_le_bytes(y));
            at += 8;
            let Some((row, used)) = buf.get(at..).and_then(OwnedRow::from_bytes) else {
                return false;
            };
            at += used;
            rows.push(row);
        }
        all.append_rows(rows.iter(), &labels);
        true
    };
    super::comm::gather_parts(comm, "the rows", write, read)?;
    if all.len() != slice.total {
        return Err(Error::Backend(format!(
            "{} rows gathered, {} expected",
            all.len(),
            slice.total
        )));
    }
    Ok(all)
}
