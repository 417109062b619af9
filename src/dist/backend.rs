//! The [`Backend`] of a distributed run: this rank's rows on a local backend, the other ranks'
//! through collectives (see the module doc of [`crate::dist`] for the plan).
//!
//! Indices are global (0..m over all ranks). The local backend holds rows
//! `[first, first + n)` as its 0..n and, as guests ([`crate::backend::Guests::add_guest`]), every point of
//! another rank that has been a vertex, an initial point or a line-search partner: such a row
//! is broadcast once by its owner, at a moment every rank reaches in the same state (all ranks
//! run the same solver on the same combined numbers), and is known everywhere afterwards.
//!
//! Exactness: a gradient entry is computed by its owner with the same column arithmetic as one
//! process; the argmin over all rows is a `min_loc` (lowest index on ties); the entries of the
//! active set are gathered exactly (a `sum` where the owner contributes the value and the
//! others 0) so αᵀg and the argmax over A are formed in the same order as one process forms
//! them. The starting gradient is the exact f64 one of [`crate::backend::exact`], over this
//! rank's rows and the active guests.

use super::comm::{Comm, Loc};
use super::known::Known;
pub use super::known::grouping_over_ranks;
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::{
    Backend, BackendStats, Certify, Columns, Entries, Fold, FoldAsk, Local, MarkedReduction, Marks,
    Ranks, ReadEntries, Reduction, Update,
};
use crate::error::Result;
use crate::problem::Problem;
use std::collections::HashMap;

/// A local backend over this rank's rows, joined to the other ranks' by `comm`.
pub struct DistBackend<'a> {
    comm: &'a dyn Comm,
    local: Box<dyn Local + 'a>,
    known: Known<'a>,
    slice: RowSlice,
    /// g⁻ is kept (PARTAN): reductions report αᵀg⁻.
    prev: bool,
    /// αᵀg and the away vertex from each rank's part ([`TrainParams::partial_sums`](crate::train::TrainParams::partial_sums)).
    partial: bool,
    /// Local index of every point this rank can compute columns of besides its own rows;
    /// the same keys on every rank.
    guests: HashMap<usize, usize>,
    // Scratch.
    vals: Vec<f64>,
    vals_prev: Vec<f64>,
    local_cols: Vec<(usize, f64)>,
    /// An empty α over this rank's rows: the local argmin's reduction.
    empty: ActiveSet,
    own: Vec<usize>,
    pos: Vec<usize>,
    part: Vec<f64>,
    /// The hints every rank reports: its local backend's, combined over the ranks (the
    /// smallest column capacity, the largest working-set floor, local entries where every
    /// rank's are), so that every rank's solver sizes its working sets alike.
    hints: crate::backend::Hints,
    /// α over this rank's rows, the local candidates of a selection and the merged buffer.
    own_alpha: ActiveSet,
    cands: Vec<(f64, usize)>,
    merged: Vec<f64>,
    local_w: Vec<usize>,
}

/// The column capacity one process would report from the ranks' capacities `cap` over their
/// `rows`: every point's column where each rank holds a column per row of its own (columns
/// computed where they are used), else the least rank's cache scaled from its rows to all of
/// them (a cache of the same bytes holds that many columns of every row; the working set's q,
/// which this caps, is then one process's up to that rounding).
fn column_capacity(cap: &[u64], rows: &[u64]) -> usize {
    let total: u64 = rows.iter().sum();
    // A rank without rows holds no column of anyone's: it bounds nothing.
    let held = || cap.iter().zip(rows).filter(|&(_, &n)| n > 0);
    if held().all(|(&c, &n)| c == n) {
        return total as usize;
    }
    held()
        .map(|(&c, &n)| (c as u128 * n as u128 / total as u128).min(c as u128) as u64)
        .min()
        .unwrap_or(0) as usize
}

impl<'a> DistBackend<'a> {
    /// Joins `local` (a backend over `prob`, this rank's rows `slice`) to the other ranks;
    /// every rank must call it.
    pub fn new(
        comm: &'a dyn Comm,
        prob: &'a Problem<'a>,
        local: Box<dyn Local + 'a>,
        slice: RowSlice,
    ) -> Result<Self> {
        let h = local.hints();
        let all = |v: u64| -> Result<Vec<u64>> { comm.gather_all(v) };
        let cap = all(h.column_capacity.min(u64::MAX as usize) as u64)?;
        let rows = all(local.len() as u64)?;
        let floor = all(h.ws_floor as u64)?;
        let entries = all(u64::from(h.entries_are_local))?;
        let columns_start = all(u64::from(h.start_from_columns))?;
        let hints = crate::backend::Hints {
            start_from_columns: columns_start.iter().all(|&e| e != 0),
            partial_sums: false,
            column_capacity: column_capacity(&cap, &rows),
            ws_floor: floor.iter().copied().max().unwrap_or(0) as usize,
            entries_are_local: entries.iter().all(|&e| e != 0),
        };
        Ok(DistBackend {
            comm,
            local,
            known: Known::new(comm, prob, slice)?,
            slice,
            prev: false,
            partial: false,
            guests: HashMap::new(),
            vals: Vec::new(),
            vals_prev: Vec::new(),
            local_cols: Vec::new(),
            empty: ActiveSet::new(slice.rows),
            own: Vec::new(),
            pos: Vec::new(),
            part: Vec::new(),
            hints,
            own_alpha: ActiveSet::new(slice.rows),
            cands: Vec::new(),
            merged: Vec::new(),
            local_w: Vec::new(),
        })
    }

    /// The `k` lowest (value, global index) pairs over the ranks, ascending (the lower index
    /// first on ties), from each rank's own `k` lowest in `self.cands` (local indices): the k
    /// lowest overall are among them, so this is the selection one process makes over all the
    /// pairs. One `sum` of P·(1 + 3k) numbers, each rank filling its own part (a count, then
    /// each value as two 32-bit halves of its bits — a sum that adds zeros to them keeps
    /// every bit, the sign of a zero included — and its index). Collective.
    fn merge_lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        let (p, r) = (self.comm.size(), self.comm.rank());
        let part = 1 + 3 * k;
        let buf = &mut self.merged;
        buf.clear();
        buf.resize(p * part, 0.0);
        let mine = &mut buf[r * part..(r + 1) * part];
        let n = self.cands.len().min(k);
        mine[0] = n as f64;
        for (t, &(v, i)) in self.cands[..n].iter().enumerate() {
            let b = v.to_bits();
            mine[1 + 3 * t] = (b >> 32) as f64;
            mine[2 + 3 * t] = (b & 0xffff_ffff) as f64;
            mine[3 + 3 * t] = (i + self.slice.first) as f64;
        }
        self.comm.sum(buf)?;
        out.clear();
        for q in 0..p {
            let at = &buf[q * part..(q + 1) * part];
            for t in 0..(at[0] as usize).min(k) {
                let bits = ((at[1 + 3 * t] as u64) << 32) | at[2 + 3 * t] as u64;
                out.push((f64::from_bits(bits), at[3 + 3 * t] as usize));
            }
        }
        crate::backend::select_lowest(out, k);
        Ok(())
    }

    /// This backend with αᵀg, αᵀg⁻ and the away vertex combined from each rank's part (three
    /// numbers per reduction) rather than from the active set's gradient entries gathered
    /// exactly: less traffic, sums in another order than one process's.
    pub fn with_partial_sums(mut self, on: bool) -> Self {
        self.partial = on;
        self
    }

    /// True when global row j is this rank's.
    fn is_own(&self, j: usize) -> bool {
        self.slice.range().contains(&j)
    }

    /// (αᵀg, αᵀg⁻, away vertex, its g) over this rank's points of α, then combined over the
    /// ranks: one sum of two numbers and one max-location reduction (lowest index on ties).
    fn partial_reduction(&mut self, alpha: &ActiveSet) -> Result<(f64, f64, usize, f64)> {
        let (w, prev) = (alpha.weights(), self.prev);
        let ask = FoldAsk {
            prev,
            ..FoldAsk::default()
        };
        let fold = self.fold_entries(alpha.indices(), ask, &mut |k, e| {
            (
                [w[k] * e.g, if prev { w[k] * e.gp } else { 0.0 }],
                Some(e.g),
            )
        })?;
        let (g_v, v) = fold.best.unwrap_or((f64::NEG_INFINITY, usize::MAX));
        Ok((fold.sums[0], fold.sums[1], v, g_v))
    }

    /// The points of `idx` this rank holds: their local rows into `own`, their positions in
    /// `idx` into `pos`.
    fn own_positions(&mut self, idx: &[usize]) {
        self.own.clear();
        self.pos.clear();
        for (k, &i) in idx.iter().enumerate() {
            if self.is_own(i) {
                self.own.push(i - self.slice.first);
                self.pos.push(k);
            }
        }
    }

    /// Local index of global point j (own row or guest); j must be known.
    fn local_index(&self, j: usize) -> usize {
        if self.is_own(j) {
            j - self.slice.first
        } else {
            self.guests[&j]
        }
    }

    /// Makes the rows of `js` known on every rank (fetched from their owners); the other ranks'
    /// join the local backend as guests. Collective.
    pub fn fetch(&mut self, js: &[usize]) -> Result<()> {
        self.known.fetch(js)?;
        // Rows known already (fetched by a certification, say) join on first use.
        for &j in js {
            if !self.is_own(j) && !self.guests.contains_key(&j) {
                let (row, y, inv_c, _) = self.known.foreign(j);
                let k = self.local.add_guest(row.as_row(), *y, *inv_c)?;
                self.guests.insert(j, k);
            }
        }
        Ok(())
    }

    /// `out[k]` ← `value(idx[k])` for every k, each computed by the owner of `idx[k]` with
    /// `local` on its local index (the others contribute 0): an exact gather. Collective.
    fn gather_with(
        &mut self,
        idx: &[usize],
        out: &mut [f64],
        local: impl FnOnce(&mut dyn Backend, &[usize], &mut [f64]) -> Result<()>,
    ) -> Result<()> {
        self.own_positions(idx);
        self.part.resize(self.own.len(), 0.0);
        local(self.local.as_mut(), &self.own, &mut self.part)?;
        out.iter_mut().for_each(|o| *o = 0.0);
        for (&k, &v) in self.pos.iter().zip(&self.part) {
            out[k] = v;
        }
        self.comm.sum(out)
    }

    /// What this rank has sent so far.
    pub fn traffic(&self) -> super::comm::Traffic {
        self.comm.traffic()
    }
}

impl Backend for DistBackend<'_> {
    fn len(&self) -> usize {
        self.slice.total
    }

    fn name(&self) -> String {
        format!(
            "{} ranks, rank {}: {}",
            self.comm.size(),
            self.comm.rank(),
            self.local.name()
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.local.q_diag(self.local_index(i))
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.local.q(self.local_index(i), self.local_index(j))
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        if alpha.len() <= crate::backend::START_COLUMNS && self.hints.start_from_columns {
            // One process's start (each rank its own rows).
            let prev = self.prev;
            return crate::backend::start_from_columns(self, alpha, prev);
        }
        self.fetch(alpha.indices())?;
        let g = self.known.exact_gradient(alpha, None)?;
        let mut own = ActiveSet::new(self.slice.rows);
        for (j, w) in alpha.iter().filter(|&(j, _)| self.is_own(j)) {
            own.set(j - self.slice.first, w);
        }
        self.local.set_alpha_with(&own, &g)
    }

    fn set_alpha_with(&mut self, alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        // g: all m entries, or this rank's (the working-set rounds keep only their own).
        let own_g = if g.len() == self.slice.total {
            &g[self.slice.range()]
        } else {
            g
        };
        if own_g.len() != self.slice.rows {
            return Err(crate::error::Error::Backend(format!(
                "a starting gradient of {} entries for {} rows",
                g.len(),
                self.slice.rows
            )));
        }
        self.fetch(alpha.indices())?;
        let mut own = ActiveSet::new(self.slice.rows);
        for (j, w) in alpha.iter().filter(|&(j, _)| self.is_own(j)) {
            own.set(j - self.slice.first, w);
        }
        self.local.set_alpha_with(&own, own_g)
    }

    fn enable_prev(&mut self) {
        self.prev = true;
        self.local.enable_prev();
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        let mut js = [0usize; 2];
        let mut n = 0;
        for &(j, _) in u.cols.iter().flatten() {
            js[n] = j;
            n += 1;
        }
        self.fetch(&js[..n])?;
        let mut lu = *u;
        for c in lu.cols.iter_mut().flatten() {
            c.0 = self.local_index(c.0);
        }
        self.local.update(&lu)
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        // The argmin over this rank's rows, then over all ranks.
        let lr = self.local.reduce(&self.empty)?;
        let mut s = [if self.slice.rows == 0 || lr.s == usize::MAX {
            Loc::NONE_MIN
        } else {
            Loc {
                value: lr.g_s,
                index: (lr.s + self.slice.first) as u64,
            }
        }];
        self.comm.min_loc(&mut s)?;
        if self.partial {
            let (alpha_g, alpha_g_prev, v, g_v) = self.partial_reduction(alpha)?;
            let s_idx = if s[0].index == u64::MAX {
                0
            } else {
                s[0].index as usize
            };
            let need = [s_idx, v];
            self.fetch(&need[..if v == usize::MAX { 1 } else { 2 }])?;
            return Ok(Reduction {
                s: s_idx,
                g_s: s[0].value,
                v,
                g_v,
                alpha_g,
                alpha_g_prev,
            });
        }
        // The active entries of g (and g⁻), gathered exactly, then the single-process loop.
        let n = alpha.len();
        let (mut g, mut gp) = (
            std::mem::take(&mut self.vals),
            std::mem::take(&mut self.vals_prev),
        );
        g.resize(n, 0.0);
        self.gather(alpha.indices(), &mut g)?;
        let prev = self.prev;
        if prev {
            gp.resize(n, 0.0);
            self.gather_prev(alpha.indices(), &mut gp)?;
        }
        let (mut v, mut g_v) = (usize::MAX, f64::NEG_INFINITY);
        let (mut ag, mut agp) = (0.0, 0.0);
        for (k, (i, a)) in alpha.iter().enumerate() {
            let gi = g[k];
            if gi > g_v || (gi == g_v && i < v) {
                g_v = gi;
                v = i;
            }
            ag += a * gi;
            if prev {
                agp += a * gp[k];
            }
        }
        self.vals = g;
        self.vals_prev = gp;
        let s_idx = if s[0].index == u64::MAX {
            0
        } else {
            s[0].index as usize
        };
        // The vertices the step will evaluate Q at.
        let need = [s_idx, v];
        self.fetch(&need[..if v == usize::MAX { 1 } else { 2 }])?;
        Ok(Reduction {
            s: s_idx,
            g_s: s[0].value,
            v,
            g_v,
            alpha_g: ag,
            alpha_g_prev: agp,
        })
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.gather_with(idx, out, |be, i, o| be.gather(i, o))
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.gather_with(idx, out, |be, i, o| be.gather_prev(i, o))
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.fetch(&[j])?;
        let lj = self.local_index(j);
        self.gather_with(idx, out, |be, i, o| be.column_entries(lj, i, o))
    }

    fn hints(&self) -> crate::backend::Hints {
        crate::backend::Hints {
            partial_sums: self.partial,
            ..self.hints
        }
    }

    fn stats(&self) -> BackendStats {
        self.local.stats()
    }
}

impl Columns for DistBackend<'_> {
    /// Each rank's own k lowest, merged (`DistBackend::merge_lowest`). Collective.
    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        let mut mine = std::mem::take(&mut self.cands);
        let r = self.local.lowest(k, &mut mine);
        self.cands = mine;
        r?;
        self.merge_lowest(k, out)
    }

    /// Each rank scores the points of A among its rows from its rows of s's column (s's row
    /// fetched where it is another rank's) and keeps its k best; the ranks' lists are merged
    /// (`DistBackend::merge_lowest`): the same scores and the same choice as one process.
    /// Collective.
    #[allow(clippy::too_many_arguments)]
    fn away_candidates(
        &mut self,
        s: usize,
        g_s: f64,
        alpha: &ActiveSet,
        k: usize,
        bound: &mut (usize, f64),
        scratch: &mut crate::backend::AwayScratch,
        out: &mut Vec<(f64, usize)>,
    ) -> Result<()> {
        self.fetch(&[s])?;
        let ls = self.local_index(s);
        let first = self.slice.first;
        self.own_alpha.clear();
        for (j, a) in alpha.iter() {
            if self.is_own(j) {
                self.own_alpha.set(j - first, a);
            }
        }
        let mut mine = std::mem::take(&mut self.cands);
        // The next columns are named in the problem's numbering, not the local backend's.
        scratch.next.clear();
        let r = self
            .local
            .away_candidates(ls, g_s, &self.own_alpha, k, bound, scratch, &mut mine);
        self.cands = mine;
        r?;
        self.merge_lowest(k, out)
    }

    /// W's rows fetched where they are other ranks', W's columns computed on every rank over
    /// its own rows (kept for the update that follows), each rank's rows of the block filled
    /// and the rest 0, one `sum` of the q×q block, and g at W gathered exactly. Returns this
    /// rank's cache hits. Collective.
    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> Result<usize> {
        let n = w.len();
        self.fetch(w)?;
        let mut lw = std::mem::take(&mut self.local_w);
        lw.clear();
        lw.extend(w.iter().map(|&j| self.local_index(j)));
        let held = self.local.prefetch_columns(&lw)?;
        self.own_positions(w);
        out.iter_mut().for_each(|o| *o = 0.0);
        self.part.resize(self.own.len(), 0.0);
        for (k, &lj) in lw.iter().enumerate() {
            self.local.column_entries(lj, &self.own, &mut self.part)?;
            for (&p, &v) in self.pos.iter().zip(&self.part) {
                out[k * n + p] = v;
            }
        }
        self.local_w = lw;
        self.comm.sum(out)?;
        self.gather(w, g_w)?;
        Ok(held)
    }

    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        self.fetch(js)?;
        let lj: Vec<usize> = js.iter().map(|&j| self.local_index(j)).collect();
        self.local.prefetch_columns(&lj)
    }

    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        let mut idx = std::mem::take(&mut self.own);
        idx.clear();
        idx.extend(cols.iter().map(|&(j, _)| j));
        let fetched = self.fetch(&idx);
        self.own = idx;
        fetched?;
        let mut lc = std::mem::take(&mut self.local_cols);
        lc.clear();
        lc.extend(cols.iter().map(|&(j, c)| (self.local_index(j), c)));
        let r = self.local.update_many(scale, &lc);
        self.local_cols = lc;
        r
    }
}

impl Ranks for DistBackend<'_> {
    fn gather_own(&mut self, out: &mut Vec<f64>) -> Result<std::ops::Range<usize>> {
        let own: Vec<usize> = (0..self.slice.rows).collect();
        out.resize(own.len(), 0.0);
        self.local.gather(&own, out)?;
        Ok(self.slice.range())
    }

    fn fetch_rows(&mut self, idx: &[usize]) -> Result<()> {
        self.fetch(idx)
    }

    fn fold_entries(
        &mut self,
        idx: &[usize],
        ask: FoldAsk,
        f: &mut dyn FnMut(usize, Entries) -> ([f64; 2], Option<f64>),
    ) -> Result<Fold> {
        // Each rank folds its own points, then one sum and one location reduction.
        let FoldAsk { prev, col, min, .. } = ask;
        let lj = match col {
            Some(j) => {
                self.fetch(&[j])?;
                Some(self.local_index(j))
            }
            None => None,
        };
        self.own_positions(idx);
        let n = self.own.len();
        let (mut g, mut gp) = (
            std::mem::take(&mut self.vals),
            std::mem::take(&mut self.vals_prev),
        );
        let mut q = std::mem::take(&mut self.part);
        for v in [&mut g, &mut gp, &mut q] {
            v.clear();
            v.resize(n, 0.0);
        }
        let got = self.local.gather_fused(
            &self.own,
            &mut g,
            if prev { Some(&mut gp) } else { None },
            lj.map(|j| (j, &mut q[..])),
        );
        let mut fold = Fold::EMPTY;
        if got.is_ok() {
            let read = ReadEntries {
                g: &g,
                gp: &gp,
                q: &q,
            };
            let (local, own, pos, first) = (&self.local, &self.own, &self.pos, self.slice.first);
            fold = read.fold(
                ask,
                |t| local.q_diag(own[t]),
                |t| (pos[t], own[t] + first),
                f,
            );
        }
        self.vals = g;
        self.vals_prev = gp;
        self.part = q;
        got?;
        let mut sums = fold.sums;
        self.comm.sum(&mut sums)?;
        let mut best = [match fold.best {
            Some((v, i)) => Loc {
                value: v,
                index: i as u64,
            },
            None if min => Loc::NONE_MIN,
            None => Loc::NONE_MAX,
        }];
        if min {
            self.comm.min_loc(&mut best)?;
        } else {
            self.comm.max_loc(&mut best)?;
        }
        Ok(Fold {
            sums,
            best: (best[0].index != u64::MAX).then(|| (best[0].value, best[0].index as usize)),
        })
    }
}

impl Certify for DistBackend<'_> {
    fn certify_exact(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        self.known.certify(alpha, &mut Vec::new()).map(Some)
    }

    fn certify_exact_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
    ) -> Result<Option<(f64, f64)>> {
        self.known.certify_rows(alpha, rows).map(Some)
    }

    fn exact_full_gradient(&mut self, alpha: &ActiveSet) -> Result<Option<Vec<f64>>> {
        let own = self.known.exact_gradient(alpha, None)?;
        let mut g = vec![0.0; self.slice.total];
        g[self.slice.range()].copy_from_slice(&own);
        self.comm.sum(&mut g)?;
        Ok(Some(g))
    }
}

impl Marks for DistBackend<'_> {
    fn fill_marks(&mut self, mk: u8) -> Result<()> {
        self.local.fill_marks(mk)
    }

    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()> {
        let own: Vec<(usize, u8)> = marks
            .iter()
            .filter(|&&(i, _)| self.is_own(i))
            .map(|&(i, mk)| (i - self.slice.first, mk))
            .collect();
        self.local.set_marks(&own)
    }

    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction> {
        // Each rank's marked minima and maximum, then over all ranks (lowest index on ties).
        let lr = self.local.reduce_marked(shift)?;
        let first = self.slice.first;
        let loc = |(i, v): (usize, f64), none: Loc| {
            if i == usize::MAX {
                none
            } else {
                Loc {
                    value: v,
                    index: (i + first) as u64,
                }
            }
        };
        let mut lows = [loc(lr.low, Loc::NONE_MIN), loc(lr.mid, Loc::NONE_MIN)];
        self.comm.min_loc(&mut lows)?;
        let mut high = [loc(lr.high, Loc::NONE_MAX)];
        self.comm.max_loc(&mut high)?;
        let back = |l: Loc, empty: (usize, f64)| {
            if l.index == u64::MAX {
                empty
            } else {
                (l.index as usize, l.value)
            }
        };
        let e = MarkedReduction::EMPTY;
        let r = MarkedReduction {
            low: back(lows[0], e.low),
            mid: back(lows[1], e.mid),
            high: back(high[0], e.high),
        };
        // The points a step may evaluate Q at.
        let need: Vec<usize> = [r.low.0, r.mid.0, r.high.0]
            .into_iter()
            .filter(|&i| i != usize::MAX)
            .collect();
        self.fetch(&need)?;
        Ok(r)
    }
}
