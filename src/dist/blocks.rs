//! The kernel blocks of the sampled iterations over ranks: a [`BlockEngine`] whose rows are
//! split by owner.
//!
//! Every rank runs the same [`Sampled`](crate::backend::sampled::Sampled) backend on the same
//! draws (its host state — T, g on T, the draws — is replicated; the draws come from the same
//! seeded generator over the m global indices). A block `out[k] = Σ_j w_j Q(rows[k], j)` is
//! computed by the owners of its rows: the rows of the weights (the support of α, a step's
//! columns) are fetched to every rank once, each rank computes its own rows' entries with the
//! arithmetic one process uses (the same method for the whole block, each row on its own:
//! [`crate::backend::exact::gradient_rows_of_block`]), and one `sum` over all of the call's
//! jobs — the others contribute 0 — hands every rank every entry, bit for bit. An engine call
//! is one collective of |S| + |T| numbers.

use super::comm::Comm;
use super::known::Known;
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::sampled::{BlockEngine, BlockJob, Weights};
use crate::error::Result;
use crate::problem::Problem;

/// Kernel blocks over every rank's rows.
pub struct DistBlocks<'a> {
    comm: &'a dyn Comm,
    known: Known<'a>,
    slice: RowSlice,
    buf: Vec<f64>,
    need: Vec<usize>,
    own: Vec<usize>,
    local: Vec<usize>,
}

impl<'a> DistBlocks<'a> {
    /// Blocks of the problem whose rows `slice` this rank holds in `prob`; every rank must call
    /// it.
    pub fn new(comm: &'a dyn Comm, prob: &'a Problem<'a>, slice: RowSlice) -> Result<Self> {
        let mut known = Known::new(comm, prob, slice)?;
        if slice.total > 0 {
            // Q_00: the MEB rule's constant and the safeguard's.
            known.fetch(&[0])?;
        }
        Ok(DistBlocks {
            comm,
            known,
            slice,
            buf: Vec::new(),
            need: Vec::new(),
            own: Vec::new(),
            local: Vec::new(),
        })
    }
}

impl BlockEngine for DistBlocks<'_> {
    fn name(&self) -> String {
        format!("{} ranks, rank {}: cpu", self.comm.size(), self.comm.rank())
    }

    fn len(&self) -> usize {
        self.slice.total
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.known.q(i, j)
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.known.q_diag(i)
    }

    fn fetch(&mut self, idx: &[usize]) -> Result<()> {
        self.known.fetch(idx)
    }

    fn certify(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        self.known.certify(alpha, &mut Vec::new()).map(Some)
    }

    fn run(&mut self, jobs: &mut [BlockJob<'_>]) -> Result<()> {
        // Every weight's row on every rank first: what follows is local to each rank.
        self.need.clear();
        for job in jobs.iter() {
            job.weights.for_each(|j, _| self.need.push(j));
        }
        let need = std::mem::take(&mut self.need);
        let fetched = self.known.fetch(&need);
        self.need = need;
        fetched?;
        let total: usize = jobs.iter().map(|j| j.out.len()).sum();
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.resize(total, 0.0);
        let mut off = 0;
        for job in jobs.iter() {
            self.own.clear();
            self.local.clear();
            for (k, &i) in job.rows.iter().enumerate() {
                if self.slice.range().contains(&i) {
                    self.own.push(k);
                    self.local.push(i - self.slice.first);
                }
            }
            if !self.own.is_empty() {
                match job.weights {
                    Weights::Alpha(a) => {
                        let g = self
                            .known
                            .exact_gradient(a, Some((&self.local, job.rows.len())))?;
                        for (&k, v) in self.own.iter().zip(g) {
                            buf[off + k] = v;
                        }
                    }
                    Weights::Cols(cols) => {
                        for &k in &self.own {
                            let i = job.rows[k];
                            let mut v = 0.0;
                            for &(j, c) in cols {
                                v += c * self.known.q(i, j);
                            }
                            buf[off + k] = v;
                        }
                    }
                }
            }
            off += job.out.len();
        }
        let summed = self.comm.sum(&mut buf);
        let mut off = 0;
        for job in jobs.iter_mut() {
            let n = job.out.len();
            job.out.copy_from_slice(&buf[off..off + n]);
            off += n;
        }
        self.buf = buf;
        summed
    }
}
