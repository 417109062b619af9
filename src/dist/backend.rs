//! The [`Backend`] of a distributed run: this rank's rows on a local backend, the other ranks'
//! through collectives (see the module doc of [`crate::dist`] for the plan).
//!
//! Indices are global (0..m over all ranks). The local backend holds rows
//! `[first, first + n)` as its 0..n and, as guests ([`Backend::add_guest`]), every point of
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
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::{
    Backend, BackendStats, Entries, Fold, FoldAsk, MarkedReduction, Reduction, Update,
};
use crate::data::{Dataset, Features, OwnedRow};
use crate::error::Result;
use crate::problem::Problem;
use std::collections::HashMap;

/// Whether one process would group the repeated rows of every rank's `local` rows together
/// ([`crate::problem::groups_rows`] on the distinct rows of all of them), so each rank can
/// group its own rows exactly when one process would (see
/// [`Problem::with_distinct_rows`]). Rows are told apart by their 64-bit hash
/// ([`crate::problem::row_hash`]); each rank's distinct hashes travel only when the counts
/// alone do not decide (the largest rank's count above the limit: no; their sum within it:
/// yes). Collective.
pub fn grouping_over_ranks(comm: &dyn Comm, local: &Dataset) -> Result<bool> {
    let m: u64 = comm.gather_all(local.len() as u64)?.iter().sum();
    let m = m as usize;
    if m < crate::problem::DEDUP_MIN_ROWS {
        return Ok(false);
    }
    let mut hashes: Vec<u64> = (0..local.len())
        .map(|i| crate::problem::row_hash(local.row(i)))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    let counts = comm.gather_all(hashes.len() as u64)?;
    let (max, sum) = (
        counts.iter().copied().max().unwrap_or(0) as usize,
        counts.iter().sum::<u64>() as usize,
    );
    if !crate::problem::groups_rows(m, max) {
        return Ok(false);
    }
    if crate::problem::groups_rows(m, sum) {
        return Ok(true);
    }
    let all: std::collections::HashSet<u64> = super::comm::all_gather(comm, &hashes)?
        .into_iter()
        .collect();
    Ok(crate::problem::groups_rows(m, all.len()))
}

/// The points of a distributed problem this rank knows: its own rows (through its problem)
/// and the rows of other ranks it has fetched; every rank fetches the same rows at the same
/// moment, so every rank knows the same points.
pub(super) struct Known<'a> {
    comm: &'a dyn Comm,
    /// This rank's problem (its rows, labels, costs).
    prob: &'a Problem<'a>,
    slice: RowSlice,
    /// First global row of every rank, and m at the end.
    starts: Vec<usize>,
    /// The rows fetched (global index → row, y, 1/C, ‖x‖²), own ones included.
    rows: HashMap<usize, (OwnedRow, f64, f64, f64)>,
}

impl<'a> Known<'a> {
    /// This rank's rows `slice` of the problem, `prob` holding them; every rank must call it.
    pub(super) fn new(comm: &'a dyn Comm, prob: &'a Problem<'a>, slice: RowSlice) -> Result<Self> {
        let firsts = comm.gather_all(slice.first as u64)?;
        let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
        starts.push(slice.total);
        Ok(Known {
            comm,
            prob,
            slice,
            starts,
            rows: HashMap::new(),
        })
    }

    /// True when global row j is this rank's.
    pub(super) fn is_own(&self, j: usize) -> bool {
        self.slice.range().contains(&j)
    }

    /// Makes the rows of `js` known on every rank: the ones not known yet come from their
    /// owners (one broadcast per owning rank). Collective.
    pub(super) fn fetch(&mut self, js: &[usize]) -> Result<()> {
        let mut want: Vec<usize> = Vec::new();
        for &j in js {
            if !self.rows.contains_key(&j) && !want.contains(&j) {
                want.push(j);
            }
        }
        if want.is_empty() {
            return Ok(());
        }
        let prob = self.prob;
        let got = super::exchange::exchange_rows(
            self.comm,
            prob.data,
            self.slice.first,
            &self.starts,
            &want,
            &|i| [prob.y[i], prob.inv_c(i)],
        )?;
        for (&j, (row, [y, inv_c])) in want.iter().zip(got) {
            let norm = row.as_row().sq_norm();
            self.rows.insert(j, (row, y, inv_c, norm));
        }
        Ok(())
    }

    /// A fetched row of another rank (row, y, 1/C, ‖x‖²).
    pub(super) fn foreign(&self, j: usize) -> &(OwnedRow, f64, f64, f64) {
        &self.rows[&j]
    }

    /// Point j's row, ‖x‖², y and 1/C: an own row or a fetched one.
    fn point(&self, j: usize) -> (crate::data::Row<'_>, f64, f64, f64) {
        if self.is_own(j) {
            let i = j - self.slice.first;
            (
                self.prob.data.row(i),
                self.prob.norms[i],
                self.prob.y[i],
                self.prob.inv_c(i),
            )
        } else {
            let (r, y, c, n) = &self.rows[&j];
            (r.as_row(), *n, *y, *c)
        }
    }

    /// Q_ij with the arithmetic of [`Problem::q`] (both points known).
    pub(super) fn q(&self, i: usize, j: usize) -> f64 {
        let ((ri, ni, yi, ci), (rj, nj, yj, _)) = (self.point(i), self.point(j));
        let v = yi * yj * (self.prob.kernel.from_dot(ri.dot(&rj), ni, nj) + 1.0);
        if i == j { v + ci } else { v }
    }

    /// Q_ii, as [`Problem::q_diag`].
    pub(super) fn q_diag(&self, i: usize) -> f64 {
        let (_, n, _, c) = self.point(i);
        self.prob.kernel.from_dot(n, n, n) + 1.0 + c
    }

    /// A problem over this rank's rows `own` (local indices, ascending) followed by the
    /// fetched points `foreign` (global), with this rank's kernel, C and class weights, for
    /// computing the exact gradient of those rows; row weights stay on the own rows (a foreign
    /// row's does not enter this rank's entries).
    fn problem_of(
        &self,
        own: Option<&[usize]>,
        foreign: &[usize],
    ) -> (Dataset, Vec<f64>, Option<Vec<f64>>) {
        let extra: Vec<&OwnedRow> = foreign.iter().map(|j| &self.rows[j].0).collect();
        let ys: Vec<f64> = foreign.iter().map(|j| self.rows[j].1).collect();
        let (base, mut y, own_n) = match own {
            None => (self.prob.data.clone(), self.prob.y.clone(), self.slice.rows),
            Some(o) => (
                self.prob.data.subset(o),
                o.iter().map(|&i| self.prob.y[i]).collect(),
                o.len(),
            ),
        };
        let ds = with_rows(&base, &extra, &ys);
        y.extend_from_slice(&ys);
        let weights = if self.prob.has_row_weights() {
            let own_rows: Vec<usize> = match own {
                None => (0..own_n).collect(),
                Some(o) => o.to_vec(),
            };
            let mut s = self.prob.row_weights_of(&own_rows).unwrap_or_default();
            s.extend(std::iter::repeat_n(1.0, foreign.len()));
            Some(s)
        } else {
            None
        };
        (ds, y, weights)
    }

    /// The exact f64 gradient at α of this rank's rows `rows` (local indices, ascending; all
    /// of them when None), computed as one process computes them: [`crate::backend::exact`]
    /// over those rows with α's points of other ranks appended — the full pass, or the rows
    /// of a block of `block_rows` ([`crate::backend::exact::gradient_rows_of_block`]). Every
    /// rank must call it alike (α's rows are fetched).
    pub(super) fn exact_gradient(
        &mut self,
        alpha: &ActiveSet,
        rows: Option<(&[usize], usize)>,
    ) -> Result<Vec<f64>> {
        self.fetch(alpha.indices())?;
        let own_sub: Option<Vec<usize>> = rows.map(|(r, _)| {
            // The block's rows and α's own points (their α_i·1/C term needs them present).
            let mut o: Vec<usize> = r.to_vec();
            o.extend(
                alpha
                    .indices()
                    .iter()
                    .filter(|&&j| self.is_own(j))
                    .map(|&j| j - self.slice.first),
            );
            o.sort_unstable();
            o.dedup();
            o
        });
        let n = own_sub.as_ref().map_or(self.slice.rows, |o| o.len());
        let foreign: Vec<usize> = alpha
            .indices()
            .iter()
            .copied()
            .filter(|&j| !self.is_own(j))
            .collect();
        let (ds, y, weights) = self.problem_of(own_sub.as_deref(), &foreign);
        // Rows grouped as the rank's problem groups them (one process's decision), so the
        // full pass merges α's repeated points as one process merges them; a block's rows
        // are computed without groups in one process too (no hashing per sampled block).
        let group = rows.is_none() && self.prob.distinct_rows().is_some();
        let mut p = Problem::new(&ds, y, self.prob.kernel, self.prob.c)?
            .with_class_weights(self.prob.weights.0, self.prob.weights.1)?
            .with_distinct_rows(group);
        if let Some(s) = weights {
            p = p.with_row_weights(s)?;
        }
        // Global point → index in p (α's foreign points after this rank's rows).
        let slot: HashMap<usize, usize> = foreign
            .iter()
            .enumerate()
            .map(|(k, &j)| (j, n + k))
            .collect();
        let at = |j: usize| -> usize {
            if self.is_own(j) {
                let i = j - self.slice.first;
                match &own_sub {
                    None => i,
                    Some(o) => o
                        .binary_search(&i)
                        .expect("α's own points are in the block"),
                }
            } else {
                slot[&j]
            }
        };
        let mut a = ActiveSet::new(n + foreign.len());
        for (j, w) in alpha.iter() {
            a.set(at(j), w);
        }
        match rows {
            None => {
                let mut g = vec![0.0; n + foreign.len()];
                crate::backend::exact::full_gradient(&p, &a, &mut g);
                g.truncate(n);
                Ok(g)
            }
            Some((r, block_rows)) => {
                let o = own_sub.as_ref().expect("rows given");
                let idx: Vec<usize> = r
                    .iter()
                    .map(|i| o.binary_search(i).expect("the block's rows are in it"))
                    .collect();
                let mut g = vec![0.0; idx.len()];
                crate::backend::exact::gradient_rows_of_block(&p, &a, &idx, &mut g, block_rows);
                Ok(g)
            }
        }
    }

    /// The certified (f, gap) of α over the points `rows` ⊇ supp(α) (global), as
    /// [`crate::backend::exact::certify_rows`] computes them in one process: each owner
    /// computes its entries of the same block, gathered exactly. Collective.
    pub(super) fn certify_rows(&mut self, alpha: &ActiveSet, rows: &[usize]) -> Result<(f64, f64)> {
        let mut all: Vec<usize> = rows.to_vec();
        let listed: std::collections::HashSet<usize> = rows.iter().copied().collect();
        all.extend(
            alpha
                .indices()
                .iter()
                .copied()
                .filter(|i| !listed.contains(i)),
        );
        self.fetch(alpha.indices())?;
        let (pos, local): (Vec<usize>, Vec<usize>) = all
            .iter()
            .enumerate()
            .filter(|&(_, &i)| self.is_own(i))
            .map(|(k, &i)| (k, i - self.slice.first))
            .unzip();
        let mut g = vec![0.0; all.len()];
        if !local.is_empty() {
            let own = self.exact_gradient(alpha, Some((&local, all.len())))?;
            for (&k, v) in pos.iter().zip(own) {
                g[k] = v;
            }
        }
        self.comm.sum(&mut g)?;
        let (f, gap, _) = crate::backend::exact::gap_over(alpha, &all, &g);
        Ok((f, gap))
    }

    /// The certified (f, gap) of α over every rank's rows, as one process computes them,
    /// leaving this rank's rows' exact gradient in `g`. Collective.
    pub(super) fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<(f64, f64)> {
        *g = self.exact_gradient(alpha, None)?;
        let mut low = [Loc::NONE_MIN];
        for (i, &v) in g.iter().enumerate() {
            if v < low[0].value {
                low[0] = Loc {
                    value: v,
                    index: (self.slice.first + i) as u64,
                };
            }
        }
        self.comm.min_loc(&mut low)?;
        // g on A in α's order, gathered exactly, then 2f as one process sums it.
        let mut ga: Vec<f64> = alpha
            .indices()
            .iter()
            .map(|&j| {
                if self.is_own(j) {
                    g[j - self.slice.first]
                } else {
                    0.0
                }
            })
            .collect();
        self.comm.sum(&mut ga)?;
        let f = 0.5
            * alpha
                .iter()
                .zip(&ga)
                .map(|((_, a), gi)| a * gi)
                .sum::<f64>();
        Ok((f, 2.0 * f - low[0].value))
    }
}

/// A local backend over this rank's rows, joined to the other ranks' by `comm`.
pub struct DistBackend<'a> {
    comm: &'a dyn Comm,
    local: Box<dyn Backend + 'a>,
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
}

impl<'a> DistBackend<'a> {
    /// Joins `local` (a backend over `prob`, this rank's rows `slice`) to the other ranks;
    /// every rank must call it.
    pub fn new(
        comm: &'a dyn Comm,
        prob: &'a Problem<'a>,
        local: Box<dyn Backend + 'a>,
        slice: RowSlice,
    ) -> Result<Self> {
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
        })
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

/// `ds` with `extra` rows appended (the same layout: extra rows were copied from datasets read
/// the same way).
pub(super) fn with_rows(ds: &Dataset, extra: &[&OwnedRow], labels: &[f64]) -> Dataset {
    let mut out = ds.clone();
    append_rows(&mut out, extra.iter().copied(), labels);
    out
}

/// Appends `extra` rows (labels `labels`) to `ds`, in its layout.
pub(super) fn append_rows<'r>(
    ds: &mut Dataset,
    extra: impl Iterator<Item = &'r OwnedRow>,
    labels: &[f64],
) {
    match &mut ds.features {
        Features::Dense { n_features, values } => {
            for r in extra {
                let start = values.len();
                values.resize(start + *n_features, 0.0);
                r.as_row().scatter_into(&mut values[start..]);
            }
        }
        Features::Sparse {
            indptr,
            indices,
            values,
            ..
        } => {
            for r in extra {
                match r {
                    OwnedRow::Sparse(ix, v) => {
                        indices.extend_from_slice(ix);
                        values.extend_from_slice(v);
                    }
                    OwnedRow::Dense(v) => {
                        for (k, &x) in v.iter().enumerate() {
                            if x != 0.0 {
                                indices.push(k as u32);
                                values.push(x);
                            }
                        }
                    }
                }
                indptr.push(indices.len());
            }
        }
    }
    ds.labels.extend_from_slice(labels);
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

    fn fetch_rows(&mut self, idx: &[usize]) -> Result<()> {
        self.fetch(idx)
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
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

    fn gather_own(&mut self, out: &mut Vec<f64>) -> Result<std::ops::Range<usize>> {
        let own: Vec<usize> = (0..self.slice.rows).collect();
        out.resize(own.len(), 0.0);
        self.local.gather(&own, out)?;
        Ok(self.slice.range())
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

    fn partial_sums(&self) -> bool {
        self.partial
    }

    fn fold_entries(
        &mut self,
        idx: &[usize],
        ask: FoldAsk,
        f: &mut dyn FnMut(usize, Entries) -> ([f64; 2], Option<f64>),
    ) -> Result<Fold> {
        // Each rank folds its own points, then one sum and one location reduction.
        let FoldAsk {
            prev,
            col,
            diag,
            min,
        } = ask;
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
            for t in 0..n {
                let e = Entries {
                    g: g[t],
                    gp: gp[t],
                    q: q[t],
                    qd: if diag {
                        self.local.q_diag(self.own[t])
                    } else {
                        0.0
                    },
                };
                let (sums, cand) = f(self.pos[t], e);
                fold.add(sums, cand.map(|v| (v, self.own[t] + self.slice.first)), min);
            }
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

    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        self.fetch(js)?;
        let lj: Vec<usize> = js.iter().map(|&j| self.local_index(j)).collect();
        self.local.prefetch_columns(&lj)
    }

    fn stats(&self) -> BackendStats {
        self.local.stats()
    }
}
