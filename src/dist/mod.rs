//! Training across processes: row-partitioned, one local backend per rank.
//!
//! A job of P ranks (`mpirun -np P fwsvm train …`) splits the m training rows into P contiguous
//! slices, rank r owning the global rows `[first_r, first_r + n_r)` ([`slice`](mod@slice): each
//! rank reads only its byte range of a plain file, with errors naming the global line). Every
//! rank runs the same solver on the same combined scalars, so every rank makes the same calls
//! in the same order, and the collectives of [`comm`] can sit inside
//! [`Backend`](crate::backend::Backend) methods:
//!
//! * `reduce`: the argmin over all rows is one `min_loc` (lowest global index on ties, as the
//!   single-process scan); the gradient entries of the active set are gathered exactly — a
//!   `sum` over a vector where each owner fills its entries and the others hold 0, which adds
//!   nothing in floating point — so every rank forms αᵀg and the argmax over A in the same
//!   order as one process would, bit for bit;
//! * `update`: each column's feature row travels once, from its owner to all (`broadcast`),
//!   the first time that point becomes a vertex; each rank then updates its own gradient
//!   entries with its local backend;
//! * `gather`, `column_entries`: the same exact gather;
//! * the exact certification: each rank's partial αᵀg and min g, combined.
//!
//! What each rank sends is counted ([`comm::Traffic`]) so the tool reports messages and bytes
//! per iteration. [`comm::ThreadComm`] runs P ranks as threads of one process (tests, and
//! machines without MPI); `mpi::MpiComm` (`--features mpi`) runs them under `mpirun`.
//!
//! The backend is [`backend::DistBackend`] over a local CPU backend that computes columns of
//! other ranks' points as guests (`Guests::add_guest`); the solver's initial sample
//! (`Ranks::fetch_rows`), MEB constant and certification (`Certify::certify_exact`) go through
//! the backend. `tests/dist.rs` runs every FW variant and the CVM on 2–4 ranks and checks every
//! iterate, the final α and the certified figures against one process, bit for bit (f64
//! columns), an empty slice and a rank without support vectors included.
//!
//! [`train::train_model`] trains the model (binary, or one-versus-one with each pair over all
//! ranks) and gathers its support vectors, [`train::cross_validate`] runs `-v K` with every
//! fold over all ranks; `mpirun -np P fwsvm train` runs them (feature `mpi`), `fwsvm bench
//! scale --ranks` on threads.
//!
//! Sampled iterations (`--sample`) run the same [`Sampled`](crate::backend::sampled::Sampled)
//! backend on every rank over a [`blocks::DistBlocks`] engine: the draws are replicated, each
//! kernel block is computed by the owners of its rows, one `sum` per engine call.
//!
//! A cross-validation (`-v K`), a grid search (`fwsvm grid`) or a one-versus-one model under
//! `mpirun` either splits every training by rows or deals whole folds (grid points, class
//! pairs: [`train::train_pairs_dealt`]) to the ranks, every rank then
//! holding all rows ([`plan`]: tasks when the data fit every rank's share of memory and keep
//! every rank busy; `--distribute` overrides); [`train::cross_validate_tasks`] runs the dealt
//! folds as one process runs them.
//!
//! Working-set shrinking runs its rounds over the ranks ([`shrink`]), each rank holding its
//! own rows' part of every m-vector.
//!
//! The working-set solver runs on the same backend: its toward and away candidates are each
//! rank's own, merged by one sum (`DistBackend`'s `lowest` and `away_candidates`), and W's
//! block is assembled from each rank's rows of W's columns by one sum (`block`); repeated points
//! are merged over the ranks first as one process merges them ([`merge`]).
//!
//! Sparse FW's marked reductions are two location reductions
//! ([`backend::DistBackend`]'s `reduce_marked`); a GPU per rank is a local GPU backend with
//! guests like the CPU's.
//!
//! SimpleSVM runs on a [`backend::DistBackend`] too, every rank keeping the labels, boxes and
//! α of all points ([`crate::solver::solve_simple_with`]); its certification takes the exact
//! gradient from the owners (`Certify::exact_full_gradient`).
//!
//! Repeated rows are grouped on each rank exactly when one process would group all of them
//! ([`backend::grouping_over_ranks`]; the grouped CPU backend takes guests like the plain one),
//! so data such as KDD99 train to the single-process model too.

pub mod backend;
pub mod blocks;
pub use crate::comm;
pub mod exchange;
mod known;
pub mod merge;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod plan;
pub mod run;
pub mod shrink;
pub mod slice;
pub mod train;

/// This rank's device in a distributed run, every rank calling it alike: the CPU when `req`
/// asks for it; for a GPU request without a named adapter, the local rank's share of the
/// adapters that can run the job (modulo their number, so ranks share one GPU); for auto, the
/// request's own choice on this rank's rows `local` (a hardware GPU where they pay for one). `notes` hears rank 0's
/// account of the choice. An error on any rank ends every rank. Collective.
pub fn open_rank_device(
    comm: &dyn comm::Comm,
    mut req: crate::backend::DeviceRequest,
    local: &crate::data::Dataset,
    notes: &mut dyn FnMut(&str),
) -> crate::error::Result<crate::backend::Device> {
    let rank = comm.rank();
    use crate::backend::BackendChoice;
    let device = if req.backend == BackendChoice::Cpu {
        Ok(crate::backend::Device::Cpu)
    } else {
        if req.backend == BackendChoice::Gpu {
            req.local_rank = local_rank();
        }
        req.open_for(local, &mut |s| {
            if rank == 0 {
                notes(s);
            }
        })
    };
    comm::agree(comm, device)
}

/// This process's rank among the ranks on its machine, as the MPI launcher says (Open MPI,
/// MPICH/Hydra, MVAPICH, Slurm); None outside a launcher. A rank's default GPU adapter.
pub fn local_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "MV2_COMM_WORLD_LOCAL_RANK",
        "SLURM_LOCALID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}
