//! [`Comm`] over MPI (Open MPI or MPICH) through rsmpi: `cargo build --features mpi`, run under
//! `mpirun`. Sums are `MPI_Allreduce` with `MPI_SUM`; a location is two reductions (the
//! extreme value, then the lowest index holding it: MPI's MINLOC/MAXLOC rule without the
//! user-defined operations that would need libffi); a broadcast sends the length, then the
//! bytes.

use super::comm::{Comm, Loc, Traffic};
use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::Cell;

/// The world communicator of an MPI job (MPI is finalized when this is dropped).
pub struct MpiComm {
    world: SimpleCommunicator,
    traffic: Cell<Traffic>,
    /// The send side of the sums (kept: a sum runs every iteration).
    send: std::cell::RefCell<Vec<f64>>,
    // Dropped last: finalizes MPI.
    _universe: mpi::environment::Universe,
}

impl MpiComm {
    /// Initializes MPI (threads other than the caller's never call it); an error when MPI was
    /// initialized already.
    pub fn init() -> Result<MpiComm> {
        let universe = mpi::initialize()
            .ok_or_else(|| Error::Backend("MPI was initialized already".into()))?;
        Ok(MpiComm {
            world: universe.world(),
            traffic: Cell::new(Traffic::default()),
            send: std::cell::RefCell::new(Vec::new()),
            _universe: universe,
        })
    }

    fn count(&self, bytes: usize) {
        let mut t = self.traffic.get();
        t.messages += 1;
        t.bytes += bytes as u64;
        self.traffic.set(t);
    }

    /// Combines (value, index) pairs over every rank in two reductions: the extreme value
    /// (`MPI_MIN` or `MPI_MAX`), then the lowest index among the ranks that hold it (`MPI_MIN`)
    /// — MPI's MINLOC/MAXLOC rule without a user-defined operation.
    fn locs(&self, v: &mut [Loc], max: bool) {
        let values: Vec<f64> = v.iter().map(|l| l.value).collect();
        let mut best = vec![0.0f64; v.len()];
        self.count(8 * v.len());
        if max {
            self.world
                .all_reduce_into(&values[..], &mut best[..], SystemOperation::max());
        } else {
            self.world
                .all_reduce_into(&values[..], &mut best[..], SystemOperation::min());
        }
        let idx: Vec<u64> = v
            .iter()
            .zip(&best)
            .map(|(l, b)| if l.value == *b { l.index } else { u64::MAX })
            .collect();
        let mut low = vec![0u64; v.len()];
        self.count(8 * v.len());
        self.world
            .all_reduce_into(&idx[..], &mut low[..], SystemOperation::min());
        for ((l, b), i) in v.iter_mut().zip(best).zip(low) {
            *l = Loc { value: b, index: i };
        }
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn sum(&self, v: &mut [f64]) -> Result<()> {
        let mut send = self.send.borrow_mut();
        send.clear();
        send.extend_from_slice(v);
        self.count(8 * v.len());
        self.world
            .all_reduce_into(&send[..], v, SystemOperation::sum());
        Ok(())
    }
    fn min_loc(&self, v: &mut [Loc]) -> Result<()> {
        self.locs(v, false);
        Ok(())
    }
    fn max_loc(&self, v: &mut [Loc]) -> Result<()> {
        self.locs(v, true);
        Ok(())
    }
    fn broadcast(&self, root: usize, buf: &mut Vec<u8>) -> Result<()> {
        let p = self.world.process_at_rank(root as i32);
        let mut len = buf.len() as u64;
        p.broadcast_into(&mut len);
        buf.resize(len as usize, 0);
        self.count(if self.rank() == root {
            buf.len() + 8
        } else {
            0
        });
        if len > 0 {
            p.broadcast_into(&mut buf[..]);
        }
        Ok(())
    }
    fn gather_all(&self, v: u64) -> Result<Vec<u64>> {
        let mut out = vec![0u64; self.size()];
        self.count(8);
        self.world.all_gather_into(&v, &mut out[..]);
        Ok(out)
    }
    fn traffic(&self) -> Traffic {
        self.traffic.get()
    }
}
