//! What every rank of a distributed run knows alike: whether the ranks' rows are grouped as one
//! process would group them ([`grouping_over_ranks`]), and the points a rank knows — its own
//! rows and the other ranks' rows fetched at the same moment by every rank (`Known`).

use super::comm::{Comm, Loc};
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::data::{Dataset, OwnedRow};
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
        let ds = base.with_rows(&extra, &ys);
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
    /// rank must call it alike (α's rows are fetched), and every rank runs it whole whatever
    /// its own clock and signals say ([`crate::budget::unlimited`]).
    pub(super) fn exact_gradient(
        &mut self,
        alpha: &ActiveSet,
        rows: Option<(&[usize], usize)>,
    ) -> Result<Vec<f64>> {
        crate::budget::unlimited(|| self.exact_gradient_whole(alpha, rows))
    }

    /// [`Known::exact_gradient`]'s work.
    fn exact_gradient_whole(
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
