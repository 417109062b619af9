//! The few collective operations row-partitioned training needs, behind one trait: element-wise
//! sums, min/max with the location of the extreme (the lowest global index on ties, as the
//! single-process reductions), a broadcast of bytes from one rank, a gather of one number per
//! rank, and the agreement on errors that ends every rank when one fails. Each rank counts what
//! it sends ([`Traffic`]), so the tool itself reports the messages and bytes per iteration.
//!
//! Three implementations: [`SelfComm`] (one process: every operation is the identity),
//! [`ThreadComm`] (ranks as threads of one process: what the tests use to run P ranks without
//! MPI), and `MpiComm` (`--features mpi`: Open MPI or MPICH through rsmpi).

use crate::error::{Error, Result};
use std::sync::{Arc, Barrier, Mutex};

/// The global rows one rank owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSlice {
    /// Global index of its first row.
    pub first: usize,
    /// Rows it owns (possibly 0).
    pub rows: usize,
    /// Rows over all ranks.
    pub total: usize,
}

impl RowSlice {
    /// The global rows as a range.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.rows
    }
}

/// Messages and bytes one rank has sent through collective operations (each collective counts
/// as one message of the bytes this rank contributes: what a network model needs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Collective operations entered.
    pub messages: u64,
    /// Bytes this rank contributed to them.
    pub bytes: u64,
}

impl Traffic {
    /// What was sent between `earlier` and `self`.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            messages: self.messages - earlier.messages,
            bytes: self.bytes - earlier.bytes,
        }
    }
}

/// A value and the global index where it occurs; [`Comm::min_loc`] and [`Comm::max_loc`]
/// combine them as MPI's MINLOC and MAXLOC do: the extreme value, and on equal values the lowest
/// index. An index of `u64::MAX` with an infinite value stands for "none on this rank".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loc {
    /// The value.
    pub value: f64,
    /// Its global index.
    pub index: u64,
}

impl Loc {
    /// Nothing found: +∞ for a minimum.
    pub const NONE_MIN: Loc = Loc {
        value: f64::INFINITY,
        index: u64::MAX,
    };
    /// Nothing found: −∞ for a maximum.
    pub const NONE_MAX: Loc = Loc {
        value: f64::NEG_INFINITY,
        index: u64::MAX,
    };

    /// The smaller of two (lower index on ties).
    pub fn min(self, o: Loc) -> Loc {
        if o.value < self.value || (o.value == self.value && o.index < self.index) {
            o
        } else {
            self
        }
    }

    /// The larger of two (lower index on ties).
    pub fn max(self, o: Loc) -> Loc {
        if o.value > self.value || (o.value == self.value && o.index < self.index) {
            o
        } else {
            self
        }
    }
}

/// The collective operations of a group of ranks. Every rank must call the same operations in
/// the same order (the solver is the same deterministic program on every rank, fed the same
/// combined scalars, so it does).
pub trait Comm {
    /// This rank, 0 ≤ rank < size.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// `v[k]` ← Σ over ranks of `v[k]`.
    fn sum(&self, v: &mut [f64]) -> Result<()>;
    /// `v[k]` ← the minimum over ranks (lowest index on ties).
    fn min_loc(&self, v: &mut [Loc]) -> Result<()>;
    /// `v[k]` ← the maximum over ranks (lowest index on ties).
    fn max_loc(&self, v: &mut [Loc]) -> Result<()>;
    /// `buf` ← rank `root`'s `buf` on every rank.
    fn broadcast(&self, root: usize, buf: &mut Vec<u8>) -> Result<()>;
    /// Every rank's `v`, in rank order.
    fn gather_all(&self, v: u64) -> Result<Vec<u64>>;
    /// What this rank has sent so far.
    fn traffic(&self) -> Traffic;

    /// Makes every rank fail when one does: `Ok` everywhere when every rank's `r` is `Ok`;
    /// otherwise every rank returns the error of the lowest failing rank (its own error there,
    /// [`Error::OnRank`] with that error's message elsewhere).
    fn agree<T>(&self, r: Result<T>) -> Result<T>
    where
        Self: Sized,
    {
        agree(self, r)
    }
}

/// A value that travels as 8 little-endian bytes.
pub trait Word: Copy {
    /// Its bytes.
    fn to_bytes(self) -> [u8; 8];
    /// The value of `b`.
    fn from_bytes(b: [u8; 8]) -> Self;
}

impl Word for f64 {
    fn to_bytes(self) -> [u8; 8] {
        self.to_le_bytes()
    }
    fn from_bytes(b: [u8; 8]) -> Self {
        f64::from_le_bytes(b)
    }
}

impl Word for u64 {
    fn to_bytes(self) -> [u8; 8] {
        self.to_le_bytes()
    }
    fn from_bytes(b: [u8; 8]) -> Self {
        u64::from_le_bytes(b)
    }
}

/// Every rank's `own` values (any number per rank), in rank order: one broadcast per rank.
/// Collective.
pub fn all_gather<T: Word>(comm: &dyn Comm, own: &[T]) -> Result<Vec<T>> {
    let mut all = Vec::new();
    for root in 0..comm.size() {
        let mut v = if root == comm.rank() {
            own.to_vec()
        } else {
            Vec::new()
        };
        broadcast_words(comm, root, &mut v)?;
        all.extend(v);
    }
    Ok(all)
}

/// Every rank's part, in rank order, one broadcast per rank: this rank's part is the bytes
/// `write` puts, and `read` decodes each rank's bytes, in rank order, into `out` (false: they
/// arrived damaged, an error naming `what` and the rank). Collective.
pub fn gather_parts<T>(
    comm: &dyn Comm,
    what: &str,
    write: impl FnOnce(&mut Vec<u8>),
    mut read: impl FnMut(&[u8], &mut Vec<T>) -> bool,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    each_rank_part(comm, what, &|_| true, write, |_, buf| read(buf, &mut out))?;
    Ok(out)
}

/// One broadcast from each rank `sends(rank)` names (every rank must name the same ones), in
/// rank order: this rank's part is the bytes `write` puts (called only when it sends), and
/// `read(root, bytes)` takes each sender's (false: they arrived damaged, an error naming `what`
/// and the rank). Collective.
pub fn each_rank_part(
    comm: &dyn Comm,
    what: &str,
    sends: &dyn Fn(usize) -> bool,
    write: impl FnOnce(&mut Vec<u8>),
    mut read: impl FnMut(usize, &[u8]) -> bool,
) -> Result<()> {
    let mut mine = Vec::new();
    if sends(comm.rank()) {
        write(&mut mine);
    }
    let mut buf = Vec::new();
    for root in (0..comm.size()).filter(|&r| sends(r)) {
        buf.clear();
        if root == comm.rank() {
            buf.extend_from_slice(&mine);
        }
        comm.broadcast(root, &mut buf)?;
        if !read(root, &buf) {
            return Err(crate::error::Error::Backend(format!(
                "{what} of rank {root} arrived damaged"
            )));
        }
    }
    Ok(())
}

/// Rank `root`'s values into `v` on every rank (any number; what other ranks held is
/// replaced). Collective.
pub fn broadcast_words<T: Word>(comm: &dyn Comm, root: usize, v: &mut Vec<T>) -> Result<()> {
    let mut buf = Vec::new();
    if root == comm.rank() {
        v.iter().for_each(|x| buf.extend_from_slice(&x.to_bytes()));
    }
    comm.broadcast(root, &mut buf)?;
    if root != comm.rank() {
        v.clear();
        v.extend(buf.chunks_exact(8).map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            T::from_bytes(w)
        }));
    }
    Ok(())
}

/// [`Comm::agree`] for any communicator (also behind `dyn Comm`).
pub fn agree<T>(comm: &dyn Comm, r: Result<T>) -> Result<T> {
    let failed = comm.gather_all(u64::from(r.is_err()))?;
    let Some(first) = failed.iter().position(|&f| f != 0) else {
        return r;
    };
    let mut msg = Vec::new();
    if comm.rank() == first
        && let Err(e) = &r
    {
        // One byte for the exit class (user error or not), then the message.
        msg.push(u8::from(e.is_user_error()));
        msg.extend_from_slice(e.to_string().as_bytes());
    }
    comm.broadcast(first, &mut msg)?;
    match r {
        Err(e) if comm.rank() == first => Err(e),
        _ => Err(Error::OnRank {
            rank: first,
            user: msg.first() == Some(&1),
            msg: String::from_utf8_lossy(msg.get(1..).unwrap_or_default()).into_owned(),
        }),
    }
}

/// One process: every collective is the identity.
#[derive(Debug, Default)]
pub struct SelfComm;

impl Comm for SelfComm {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum(&self, _v: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn min_loc(&self, _v: &mut [Loc]) -> Result<()> {
        Ok(())
    }
    fn max_loc(&self, _v: &mut [Loc]) -> Result<()> {
        Ok(())
    }
    fn broadcast(&self, _root: usize, _buf: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
    fn gather_all(&self, v: u64) -> Result<Vec<u64>> {
        Ok(vec![v])
    }
    fn traffic(&self) -> Traffic {
        Traffic::default()
    }
}

/// What the ranks of a [`ThreadComm`] group share: one slot per rank and a barrier.
struct Shared {
    slots: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
}

/// Ranks as threads of one process (for tests and for comparing against MPI without it): each
/// collective writes this rank's contribution to its slot, waits for all, reads all, and waits
/// again before the slots are reused.
pub struct ThreadComm {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
    traffic: Mutex<Traffic>,
}

impl ThreadComm {
    /// A group of `size` ranks: give element r to the thread that plays rank r.
    pub fn group(size: usize) -> Vec<ThreadComm> {
        let shared = Arc::new(Shared {
            slots: Mutex::new(vec![Vec::new(); size]),
            barrier: Barrier::new(size),
        });
        (0..size)
            .map(|rank| ThreadComm {
                rank,
                size,
                shared: shared.clone(),
                traffic: Mutex::new(Traffic::default()),
            })
            .collect()
    }

    /// Puts `mine` in this rank's slot and returns every rank's contribution.
    fn exchange(&self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        {
            let mut t = self.traffic.lock().map_err(|_| poisoned())?;
            t.messages += 1;
            t.bytes += mine.len() as u64;
        }
        self.shared.slots.lock().map_err(|_| poisoned())?[self.rank] = mine;
        self.shared.barrier.wait();
        let all = self.shared.slots.lock().map_err(|_| poisoned())?.clone();
        self.shared.barrier.wait();
        Ok(all)
    }
}

fn poisoned() -> Error {
    Error::Backend("a rank thread panicked during a collective".into())
}

fn f64s(b: &[u8]) -> impl Iterator<Item = f64> + '_ {
    b.chunks_exact(8).map(|c| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        f64::from_le_bytes(w)
    })
}

fn locs_to_bytes(v: &[Loc]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 * v.len());
    for l in v {
        b.extend_from_slice(&l.value.to_le_bytes());
        b.extend_from_slice(&l.index.to_le_bytes());
    }
    b
}

fn bytes_to_locs(b: &[u8]) -> impl Iterator<Item = Loc> + '_ {
    b.chunks_exact(16).map(|c| {
        let (mut v, mut i) = ([0u8; 8], [0u8; 8]);
        v.copy_from_slice(&c[..8]);
        i.copy_from_slice(&c[8..]);
        Loc {
            value: f64::from_le_bytes(v),
            index: u64::from_le_bytes(i),
        }
    })
}

impl ThreadComm {
    /// `v[k]` ← the best over ranks by `pick`, starting from `none`.
    fn combine_locs(&self, v: &mut [Loc], none: Loc, pick: fn(Loc, Loc) -> Loc) -> Result<()> {
        let all = self.exchange(locs_to_bytes(v))?;
        v.iter_mut().for_each(|l| *l = none);
        for b in &all {
            for (x, y) in v.iter_mut().zip(bytes_to_locs(b)) {
                *x = pick(*x, y);
            }
        }
        Ok(())
    }
}

impl Comm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn sum(&self, v: &mut [f64]) -> Result<()> {
        let all = self.exchange(v.iter().flat_map(|x| x.to_le_bytes()).collect())?;
        v.iter_mut().for_each(|x| *x = 0.0);
        // Rank order, as MPI's reductions on one node: the same sum on every rank.
        for b in &all {
            for (x, y) in v.iter_mut().zip(f64s(b)) {
                *x += y;
            }
        }
        Ok(())
    }
    fn min_loc(&self, v: &mut [Loc]) -> Result<()> {
        self.combine_locs(v, Loc::NONE_MIN, Loc::min)
    }
    fn max_loc(&self, v: &mut [Loc]) -> Result<()> {
        self.combine_locs(v, Loc::NONE_MAX, Loc::max)
    }
    fn broadcast(&self, root: usize, buf: &mut Vec<u8>) -> Result<()> {
        let mine = if self.rank == root {
            buf.clone()
        } else {
            Vec::new()
        };
        let mut all = self.exchange(mine)?;
        if self.rank != root {
            *buf = std::mem::take(&mut all[root]);
        }
        Ok(())
    }
    fn gather_all(&self, v: u64) -> Result<Vec<u64>> {
        let all = self.exchange(v.to_le_bytes().to_vec())?;
        Ok(all
            .iter()
            .map(|b| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&b[..8]);
                u64::from_le_bytes(w)
            })
            .collect())
    }
    fn traffic(&self) -> Traffic {
        self.traffic.lock().map(|t| *t).unwrap_or_default()
    }
}

/// Runs `f` on `size` ranks as threads (rank r gets element r of a [`ThreadComm`] group) and
/// returns their results in rank order.
pub fn on_threads<T: Send>(size: usize, f: impl Fn(&ThreadComm) -> T + Sync) -> Vec<T> {
    let comms = ThreadComm::group(size);
    std::thread::scope(|s| {
        let handles: Vec<_> = comms.iter().map(|c| s.spawn(|| f(c))).collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(v) => v,
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loc_ties_go_to_the_lowest_index() {
        let a = Loc {
            value: 1.0,
            index: 7,
        };
        let b = Loc {
            value: 1.0,
            index: 3,
        };
        assert_eq!(a.min(b), b);
        assert_eq!(b.min(a), b);
        assert_eq!(a.max(b), b);
        assert_eq!(Loc::NONE_MIN.min(a), a);
        assert_eq!(Loc::NONE_MAX.max(a), a);
    }

    #[test]
    fn collectives_on_threads() {
        let out = on_threads(4, |c| {
            let r = c.rank() as f64;
            let mut s = [r, 1.0];
            c.sum(&mut s).unwrap();
            // Every rank holds the value 5 at index 10 − rank: the tie goes to rank 3's index.
            let mut lo = [Loc {
                value: if c.rank() == 0 { 2.0 } else { 5.0 },
                index: 10 - c.rank() as u64,
            }];
            let mut hi = lo;
            c.min_loc(&mut lo).unwrap();
            c.max_loc(&mut hi).unwrap();
            let mut b = if c.rank() == 2 {
                b"row".to_vec()
            } else {
                Vec::new()
            };
            c.broadcast(2, &mut b).unwrap();
            let g = c.gather_all(c.rank() as u64 * 10).unwrap();
            (s, lo[0], hi[0], b, g, c.traffic())
        });
        for (s, lo, hi, b, g, t) in out {
            assert_eq!(s, [6.0, 4.0]);
            assert_eq!((lo.value, lo.index), (2.0, 10));
            assert_eq!((hi.value, hi.index), (5.0, 7));
            assert_eq!(b, b"row");
            assert_eq!(g, vec![0, 10, 20, 30]);
            assert_eq!(t.messages, 5);
        }
    }

    #[test]
    fn one_failing_rank_fails_all_with_its_message() {
        let out = on_threads(3, |c| {
            let r: Result<u32> = if c.rank() >= 1 {
                Err(Error::Parse {
                    path: "data.txt".into(),
                    line: 10 + c.rank(),
                    msg: "bad token".into(),
                })
            } else {
                Ok(1)
            };
            c.agree(r).map_err(|e| (e.to_string(), e.is_user_error()))
        });
        assert!(matches!(&out[0], Err((m, true)) if m.contains("data.txt:11: bad token")));
        assert!(matches!(&out[1], Err((m, true)) if m == "data.txt:11: bad token"));
        assert!(matches!(&out[2], Err((m, true)) if m.contains("data.txt:11")));
        let ok = on_threads(2, |c| c.agree(Ok::<_, Error>(c.rank())).unwrap());
        assert_eq!(ok, vec![0, 1]);
    }
}
