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

/// The layout statistics of every rank's `local` rows together ([`crate::data::LayoutStats`]
/// of the whole set), so that each rank's CPU backend lays out its rows as one process lays out
/// all of them: the rows and stored values summed (`grouped`: of the distinct rows over all
/// ranks, which a grouped backend lays out; told apart by their 64-bit hashes), a feature
/// 0/1-valued (and every value 1) where it is so on every rank. Collective.
pub fn layout_over_ranks(
    comm: &dyn Comm,
    local: &Dataset,
    grouped: bool,
) -> Result<crate::data::LayoutStats> {
    let own = crate::data::LayoutStats::of(local);
    let d = comm
        .gather_all(own.zero_one.len() as u64)?
        .into_iter()
        .max()
        .unwrap_or(0) as usize;
    let mut v = vec![0.0; 3 + d];
    v[0] = own.rows as f64;
    v[1] = own.nnz as f64;
    v[2] = f64::from(u8::from(!own.all_ones));
    for (f, &z) in own.zero_one.iter().enumerate() {
        v[3 + f] = f64::from(u8::from(!z));
    }
    if grouped {
        // Each distinct row once over all ranks, with its stored values.
        let mut seen: HashMap<u64, u64> = HashMap::new();
        for i in 0..local.len() {
            let row = local.row(i);
            let nnz = match row {
                crate::data::Row::Dense(x) => x.len(),
                crate::data::Row::Sparse(ix, _) => ix.len(),
            };
            seen.entry(crate::problem::row_hash(row))
                .or_insert(nnz as u64);
        }
        let mine: Vec<u64> = seen.iter().flat_map(|(&h, &n)| [h, n]).collect();
        let mut all: HashMap<u64, u64> = HashMap::new();
        for p in super::comm::all_gather(comm, &mine)?.chunks_exact(2) {
            all.entry(p[0]).or_insert(p[1]);
        }
        v[0] = 0.0;
        v[1] = 0.0;
        let (rows, nnz) = (all.len(), all.values().sum::<u64>() as usize);
        comm.sum(&mut v)?;
        v[0] = rows as f64;
        v[1] = nnz as f64;
    } else {
        comm.sum(&mut v)?;
    }
    Ok(crate::data::LayoutStats {
        rows: v[0] as usize,
        nnz: v[1] as usize,
        all_ones: v[2] == 0.0,
        zero_one: v[3..].iter().map(|&x| x == 0.0).collect(),
    })
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
        crate::budget::unlimited(|| self.gradient_whole(alpha, rows, false))
    }

    /// [`Known::exact_gradient`] where an estimate will do (a warm start's, which the exact
    /// passes of the rounds follow): the f32 screen's row sums where it applies
    /// ([`crate::backend::exact::screened_gradient_rows`]), else the exact pass.
    pub(super) fn estimated_gradient(
        &mut self,
        alpha: &ActiveSet,
        rows: Option<(&[usize], usize)>,
    ) -> Result<Vec<f64>> {
        crate::budget::unlimited(|| self.gradient_whole(alpha, rows, true))
    }

    /// [`Known::exact_gradient`]'s work, screened where `screen` asks and the screen applies.
    fn gradient_whole(
        &mut self,
        alpha: &ActiveSet,
        rows: Option<(&[usize], usize)>,
        screen: bool,
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
                let own: Vec<usize> = (0..n).collect();
                if !(screen
                    && crate::backend::exact::screened_gradient_rows(&p, &a, &own, &mut g[..n]))
                {
                    crate::backend::exact::full_gradient(&p, &a, &mut g);
                }
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
                if !(screen && crate::backend::exact::screened_gradient_rows(&p, &a, &idx, &mut g))
                {
                    crate::backend::exact::gradient_rows_of_block(&p, &a, &idx, &mut g, block_rows);
                }
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

    /// The certified (f, gap) of α over every rank's rows, as one process computes them (the
    /// full f64 pass's numbers), leaving in `g` this rank's rows' gradient: exact, or where the
    /// screen applies ([`Known::certify_screened`]) exact on A and near the minimum and within
    /// the screen's bound elsewhere. Collective.
    pub(super) fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<(f64, f64)> {
        if let Some(r) = crate::budget::unlimited(|| self.certify_screened(alpha, g))? {
            return Ok(r);
        }
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

    /// The screened certification over the ranks ([`crate::backend::exact::certify_screened`]
    /// in one process): each rank computes its rows of A exactly (g at A gathered exactly, in
    /// α's order, gives 2f and A's least value U₀), bounds every other row of its own by the
    /// f32 screen, computes exactly up to [`SCREEN_PROBES`] of its rows whose upper bound lies
    /// below U₀ (the least of all, over the ranks, is U ≥ min g), then every row whose lower
    /// bound does not clear U; min g and its row are reduced over the ranks. A row left out
    /// has g_i > U ≥ min g, so (f, gap) are the full pass's to the bit. None, on every rank,
    /// where the screen does not apply on one of them. Collective.
    fn certify_screened(
        &mut self,
        alpha: &ActiveSet,
        g: &mut Vec<f64>,
    ) -> Result<Option<(f64, f64)>> {
        use crate::backend::exact::SCREEN_PROBES;
        // The one-process rule (small products are cheap in f64; grouped rows have their own
        // shortcut), decided alike on every rank.
        if self.slice.total < 4 * SCREEN_PROBES
            || alpha.len() < SCREEN_PROBES
            || self.prob.distinct_rows().is_some()
        {
            return Ok(None);
        }
        self.fetch(alpha.indices())?;
        let n = self.slice.rows;
        let foreign: Vec<usize> = alpha
            .indices()
            .iter()
            .copied()
            .filter(|&j| !self.is_own(j))
            .collect();
        let (ds, y, weights) = self.problem_of(None, &foreign);
        let mut p = Problem::new(&ds, y, self.prob.kernel, self.prob.c)?
            .with_class_weights(self.prob.weights.0, self.prob.weights.1)?
            .with_distinct_rows(false);
        if let Some(w) = weights {
            p = p.with_row_weights(w)?;
        }
        let slot: HashMap<usize, usize> = foreign
            .iter()
            .enumerate()
            .map(|(k, &j)| (j, n + k))
            .collect();
        let first = self.slice.first;
        let at = |j: usize| -> usize {
            if (first..first + n).contains(&j) {
                j - first
            } else {
                slot[&j]
            }
        };
        let mut a = ActiveSet::new(n + foreign.len());
        for (j, w) in alpha.iter() {
            a.set(at(j), w);
        }
        let mut on_a = vec![false; n];
        // This rank's rows of A, in α's order, and where they stand in it.
        let (own_pos, own_act): (Vec<usize>, Vec<usize>) = alpha
            .indices()
            .iter()
            .enumerate()
            .filter(|&(_, &j)| self.is_own(j))
            .map(|(k, &j)| (k, j - first))
            .unzip();
        own_act.iter().for_each(|&i| on_a[i] = true);
        let rest: Vec<usize> = (0..n).filter(|&i| !on_a[i]).collect();
        let parts = crate::backend::exact::screened_parts(&p, &a, &rest);
        if crate::solver::warm::on_any(self.comm, parts.is_none())? {
            return Ok(None);
        }
        let parts = parts.expect("every rank screens");
        g.clear();
        g.resize(n, 0.0);
        let mut ga_own = vec![0.0; own_act.len()];
        parts.exact(&own_act, &mut ga_own);
        let mut ga = vec![0.0; alpha.len()];
        for ((&k, &i), &v) in own_pos.iter().zip(&own_act).zip(&ga_own) {
            ga[k] = v;
            g[i] = v;
        }
        self.comm.sum(&mut ga)?;
        let f = 0.5
            * alpha
                .iter()
                .zip(&ga)
                .map(|((_, a), gi)| a * gi)
                .sum::<f64>();
        let u0 = ga.iter().copied().fold(f64::INFINITY, f64::min);
        // The screen's value on every other row, replaced below where computed exactly.
        for (k, &i) in rest.iter().enumerate() {
            g[i] = parts.centre(k);
        }
        let mut low = Loc::NONE_MIN;
        let exact = |rows: &[usize], g: &mut [f64], low: &mut Loc| {
            let mut v = vec![0.0; rows.len()];
            parts.exact(rows, &mut v);
            for (&i, &x) in rows.iter().zip(&v) {
                g[i] = x;
                if x < low.value || (x == low.value && ((first + i) as u64) < low.index) {
                    *low = Loc {
                        value: x,
                        index: (first + i) as u64,
                    };
                }
            }
        };
        for (&i, &v) in own_act.iter().zip(&ga_own) {
            if v < low.value || (v == low.value && ((first + i) as u64) < low.index) {
                low = Loc {
                    value: v,
                    index: (first + i) as u64,
                };
            }
        }
        // The probes: this rank's rows of lowest upper bound below U₀.
        let mut probes: Vec<(f64, usize)> = parts
            .hi
            .iter()
            .enumerate()
            .filter(|&(_, &h)| !(h >= u0))
            .map(|(k, &h)| (h, k))
            .collect();
        let np = SCREEN_PROBES.min(probes.len());
        if np > 0 {
            probes.select_nth_unstable_by(np - 1, |x, y| x.0.total_cmp(&y.0));
        }
        let mut probed = vec![false; rest.len()];
        let probe_rows: Vec<usize> = probes[..np]
            .iter()
            .map(|&(_, k)| {
                probed[k] = true;
                rest[k]
            })
            .collect();
        exact(&probe_rows, g, &mut low);
        let mut upper = [Loc {
            value: low.value.min(u0),
            index: 0,
        }];
        self.comm.min_loc(&mut upper)?;
        let undecided: Vec<usize> = (0..rest.len())
            .filter(|&k| !probed[k] && !(parts.lo[k] > upper[0].value))
            .map(|k| rest[k])
            .collect();
        exact(&undecided, g, &mut low);
        let mut least = [low];
        self.comm.min_loc(&mut least)?;
        if least[0].index == u64::MAX {
            // NaN everywhere: the full pass reports it.
            return Ok(None);
        }
        Ok(Some((f, 2.0 * f - least[0].value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{Comm, on_threads};

    /// The screened certification over ranks (an empty slice among them) gives the full f64
    /// pass's (f, gap) to the bit, and a gradient exact on A and within the screen's bound
    /// (about 1e-6 of each term) elsewhere.
    #[test]
    fn screened_certification_over_ranks_is_the_full_pass() {
        let (m, d) = (900, 6);
        let mut r = crate::rng::SplitMix64::new(11);
        let (mut ip, mut ix, mut vs, mut y) = (vec![0usize], Vec::new(), Vec::new(), Vec::new());
        for i in 0..m {
            let label = if i % 3 == 0 { 1.0 } else { -1.0 };
            for f in 0..d {
                ix.push(f as u32);
                let shift = if f == 0 { 0.5 * label } else { 0.0 };
                vs.push((r.next_f64() * 2.0 - 1.0 + shift) as f32);
            }
            ip.push(ix.len());
            y.push(label);
        }
        let ds = Dataset::from_csr(d, ip, ix, vs, y);
        let kernel = crate::kernel::Kernel::Rbf { gamma: 0.7 };
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, 3.0).unwrap();
        let mut alpha = ActiveSet::new(m);
        for k in 0..150 {
            alpha.set((k * 37) % m, 1.0 + (k % 5) as f64);
        }
        let total: f64 = alpha.iter().map(|(_, a)| a).sum();
        let pts: Vec<(usize, f64)> = alpha.iter().collect();
        for (i, a) in pts {
            alpha.set(i, a / total);
        }
        let mut g1 = vec![0.0; m];
        crate::backend::exact::full_gradient(&prob, &alpha, &mut g1);
        let f1 = 0.5 * alpha.iter().map(|(i, a)| a * g1[i]).sum::<f64>();
        let gap1 = 2.0 * f1 - g1.iter().copied().fold(f64::INFINITY, f64::min);
        let bounds = [0, 0, 400, m];
        let runs = on_threads(3, |c| {
            let r = c.rank();
            let slice = RowSlice {
                first: bounds[r],
                rows: bounds[r + 1] - bounds[r],
                total: m,
            };
            let rows: Vec<usize> = slice.range().collect();
            let local = ds.subset(&rows);
            let p = Problem::new(&local, local.labels.clone(), kernel, 3.0).unwrap();
            let mut known = Known::new(c, &p, slice).unwrap();
            let mut g = Vec::new();
            let screened = known.certify_screened(&alpha, &mut g).unwrap();
            (slice, screened, g)
        });
        for (slice, screened, g) in runs {
            let (f, gap) = screened.expect("the screen applies");
            assert_eq!((f.to_bits(), gap.to_bits()), (f1.to_bits(), gap1.to_bits()));
            for (k, &v) in g.iter().enumerate() {
                let i = slice.first + k;
                if alpha.get(i) > 0.0 {
                    assert_eq!(v.to_bits(), g1[i].to_bits(), "row {i} of A");
                } else {
                    assert!((v - g1[i]).abs() <= 1e-5, "row {i}: {v} against {}", g1[i]);
                }
            }
        }
    }
}
