//! [`Backend`] for [`CpuBackend`]: the calls over the passes of `pass.rs` and the column
//! cache; the call times kept in its stats are the host's.

use super::*;
use crate::backend::call;
use crate::backend::stats::timed_call;
use crate::backend::{Certify, Columns, Guests, Ranks};

impl<T: Elem> Backend for CpuBackend<'_, T> {
    fn len(&self) -> usize {
        self.prob.len()
    }

    fn name(&self) -> String {
        format!(
            "cpu ({} threads, {} columns cached, {})",
            rayon::current_num_threads(),
            self.cache.capacity(),
            if std::mem::size_of::<T>() == 4 {
                "f32 columns"
            } else {
                "f64 columns"
            }
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        if i < self.prob.len() {
            return self.prob.q_diag(i);
        }
        let (_, n, _, inv_c) = self.point(i);
        self.prob.kernel.from_dot(n, n, n) + 1.0 + inv_c
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        let m = self.prob.len();
        if i < m && j < m {
            return self.prob.q(i, j);
        }
        // The arithmetic of Problem::q, with a guest's row.
        let ((ri, ni, yi, ci), (rj, nj, yj, _)) = (self.point(i), self.point(j));
        let v = yi * yj * (self.prob.kernel.from_dot(ri.dot(&rj), ni, nj) + 1.0);
        if i == j { v + ci } else { v }
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        if alpha.len() <= crate::backend::START_COLUMNS {
            let prev = self.prev;
            return crate::backend::start_from_columns(self, alpha, prev);
        }
        if self.distinct.is_some() {
            let mut g = vec![0.0; self.prob.len()];
            crate::backend::exact::full_gradient(self.prob, alpha, &mut g);
            return self.set_alpha_with(alpha, &g);
        }
        crate::backend::exact::full_gradient(self.prob, alpha, &mut self.g);
        if self.prev {
            self.gp.copy_from_slice(&self.g);
        }
        self.min_valid = false;
        Ok(())
    }

    fn set_alpha_with(&mut self, alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        assert_eq!(g.len(), self.prob.len());
        match &mut self.distinct {
            Some(dd) => dd.groups.set(g, alpha),
            None => {
                self.g.copy_from_slice(g);
                if self.prev {
                    self.gp.copy_from_slice(g);
                }
            }
        }
        self.min_valid = false;
        Ok(())
    }

    fn enable_prev(&mut self) {
        if !self.prev {
            self.prev = true;
            match &mut self.distinct {
                Some(dd) => dd.groups.enable_prev(),
                None => self.gp = self.g.clone(),
            }
        }
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        timed_call!(self.stats, call::UPDATE, Result<()>, {
            let cols = u.merged_cols();
            let mut compute: [(usize, usize, usize); 2] = [(0, 0, 0); 2];
            let mut nc = 0;
            let mut slots: [Option<(usize, f64)>; 2] = [None, None];
            let mut pinned = None;
            let mut first_key = usize::MAX;
            for (k, c) in cols.iter().enumerate() {
                if let Some((j, coef)) = *c {
                    self.up_j[k] = j;
                    let key = self.key(j);
                    if k == 1
                        && key == first_key
                        && let Some(s0) = pinned
                    {
                        // Two rows with the same features share a (deduplicated) column.
                        slots[k] = Some((s0, coef));
                        continue;
                    }
                    first_key = key;
                    let (slot, miss) = self.resolve(key, pinned);
                    if miss {
                        self.load_query(k, j);
                        compute[nc] = (slot, j, k);
                        nc += 1;
                    }
                    slots[k] = Some((slot, coef));
                    pinned = Some(slot);
                }
            }
            if u.prev_coef != 0.0 || u.rotate {
                debug_assert!(self.prev, "update uses g⁻ but enable_prev was not called");
            }
            self.pass(
                &compute[..nc],
                Some((slots, u.scale, u.prev_coef, u.rotate && self.prev)),
            );
            self.stats.updates += 1;
            Ok(())
        })
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        timed_call!(self.stats, call::REDUCE, Result<Reduction>, {
            let (s, g_s) = self.argmin_all();
            if self.distinct.is_none() && alpha.len() >= super::REDUCE_GATHERED {
                let ((v, g_v), (alpha_g, alpha_g_prev)) = self.reduce_gathered(alpha);
                return Ok(Reduction {
                    s,
                    g_s,
                    v,
                    g_v,
                    alpha_g,
                    alpha_g_prev,
                });
            }
            let (mut v, mut g_v) = (usize::MAX, f64::NEG_INFINITY);
            let (mut ag, mut agp) = (0.0, 0.0);
            let gv = self.grad();
            for (i, a) in alpha.iter() {
                let gi = gv.g(i);
                if gi > g_v || (gi == g_v && i < v) {
                    g_v = gi;
                    v = i;
                }
                ag += a * gi;
                if self.prev {
                    agp += a * gv.gp(i);
                }
            }
            Ok(Reduction {
                s,
                g_s,
                v,
                g_v,
                alpha_g: ag,
                alpha_g_prev: agp,
            })
        })
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        timed_call!(self.stats, call::GATHER, Result<()>, {
            let gv = self.grad();
            for (o, &i) in out.iter_mut().zip(idx) {
                *o = gv.g(i);
            }
            Ok(())
        })
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let gv = self.grad();
        for (o, &i) in out.iter_mut().zip(idx) {
            *o = gv.gp(i);
        }
        Ok(())
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let slot = self.column_slot(j);
        self.read_entries(slot, j, idx, out);
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn hints(&self) -> crate::backend::Hints {
        crate::backend::Hints {
            column_capacity: self.column_capacity(),
            start_from_columns: true,
            ..Default::default()
        }
    }
}

/// Rows per task of the away candidates' scoring.
const AWAY_CHUNK: usize = 8192;
/// The away candidates are scored row by row from a support of 1/AWAY_SPARSE of the points
/// on; a smaller one is gathered where it lies.
const AWAY_SPARSE: usize = 4;

impl<T: Elem> Columns for CpuBackend<'_, T> {
    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        timed_call!(self.stats, call::PREFETCH, Result<usize>, {
            Ok(self.prefetch(js))
        })
    }

    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        timed_call!(self.stats, call::UPDATE_MANY, Result<()>, {
            if cols.len() <= 2 {
                return crate::backend::update_by_pairs(self, scale, cols);
            }
            if self.computes_in_place() || self.in_place_now {
                self.update_in_place(scale, cols);
                return Ok(());
            }
            if self.defers_columns() && self.update_deferred(scale, cols) {
                return Ok(());
            }
            let mut js = std::mem::take(&mut self.col_buf);
            js.clear();
            js.extend(cols.iter().map(|c| c.0));
            let mut slots = std::mem::take(&mut self.slot_buf);
            let done = match self.resident(&js, &mut slots) {
                Some(()) => {
                    self.update_resident(scale, cols, &slots);
                    Ok(())
                }
                None => crate::backend::update_by_pairs(self, scale, cols),
            };
            self.slot_buf = slots;
            self.col_buf = js;
            done
        })
    }

    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        timed_call!(self.stats, call::LOWEST, Result<()>, {
            let m = self.prob.len();
            let mut bound = self.lowest_bound;
            if self.distinct.is_none() {
                crate::backend::select_lowest_bounded_slice(
                    &self.g[..m],
                    k,
                    &mut bound,
                    &mut self.select_lists,
                    out,
                );
            } else {
                let gv = self.grad();
                crate::backend::select_lowest_bounded(
                    || (0..m).map(|i| (gv.g(i), i)),
                    m,
                    k,
                    &mut bound,
                    out,
                );
            }
            self.lowest_bound = bound;
            Ok(())
        })
    }

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
        timed_call!(self.stats, call::AWAY, Result<()>, {
            let n = self.len().min(alpha.dim());
            // A support of a few points is read where it lies; a large one row by row.
            if alpha.len() * AWAY_SPARSE < n {
                return crate::backend::away_candidates_by_gathers(
                    self,
                    s,
                    g_s,
                    alpha.indices(),
                    k,
                    bound,
                    scratch,
                    out,
                );
            }
            self.s_column_with(s, &scratch.next);
            let slot = self.column_slot(s);
            if self.diag.len() != self.len() {
                self.diag = (0..self.len()).map(|i| self.q_diag(i)).collect();
                let d0 = self.diag.first().copied();
                self.diag_all = d0.filter(|d| self.diag.iter().all(|x| x.to_bits() == d.to_bits()));
            }
            let chunks = n.div_ceil(AWAY_CHUNK);
            // (Scores are stored for rows read through groups or deduplicated alone.)
            while self.away_scores.len() < chunks {
                self.away_scores.push(Default::default());
            }
            let mut lists = std::mem::take(&mut self.select_lists);
            let (entries, gv, diag) = (self.entry_of(slot, s), self.grad(), &self.diag);
            // Q_ss of s, which may be a guest (a point beyond this backend's rows).
            let q_ss = self.q_diag(s);
            let positions = alpha.positions();
            match T::as_f32(self.cache.data(slot)) {
                // Plain rows: g and the f32 column read directly, eight rows a vector, each
                // chunk scored and offered in one pass (scored again when every pair is
                // offered).
                Some(col) if gv.groups.is_none() && self.distinct.is_none() => {
                    let diag_all = self.diag_all;
                    crate::backend::select_lowest_bounded_par(
                        chunks,
                        |c, t, keep| {
                            let (c0, c1) = (c * AWAY_CHUNK, n.min((c + 1) * AWAY_CHUNK));
                            let rows = away::Rows {
                                g: &gv.g[c0..c1],
                                diag: match diag_all {
                                    Some(d) => away::Diag::All(d),
                                    None => away::Diag::Each(&diag[c0..c1]),
                                },
                                col: &col[c0..c1],
                                g_s,
                                q_ss,
                            };
                            away::offer(&rows, &positions[c0..c1], c0, t, keep);
                        },
                        alpha.len(),
                        k,
                        bound,
                        &mut lists,
                        out,
                    );
                }
                _ => {
                    // A bounded pass first scores every row and keeps the scores: a pass over
                    // every pair, when the bounded one keeps too few, reads them back.
                    let stored_on_nan = k > 0 && bound.0 == k;
                    let scores = &self.away_scores;
                    crate::backend::select_lowest_bounded_par(
                        chunks,
                        |c, t, keep| {
                            let (c0, c1) = (c * AWAY_CHUNK, n.min((c + 1) * AWAY_CHUNK));
                            let mut sc = scores[c].lock().expect("no task panics holding it");
                            if !(t.is_nan() && stored_on_nan) {
                                sc.clear();
                                sc.extend((c0..c1).map(|i| {
                                    crate::backend::away_score(
                                        gv.g(i),
                                        g_s,
                                        q_ss,
                                        diag[i],
                                        entries.get(i),
                                    )
                                }));
                            }
                            keep.offer_run(&sc, Some(&positions[c0..c1]), c0, t);
                        },
                        alpha.len(),
                        k,
                        bound,
                        &mut lists,
                        out,
                    );
                }
            }
            self.select_lists = lists;
            Ok(())
        })
    }

    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> Result<usize> {
        timed_call!(self.stats, call::BLOCK, Result<usize>, {
            let n = w.len();
            self.gather(w, g_w)?;
            self.in_place_now = self.blocks_in_place(n);
            if self.in_place_now {
                self.block_in_place(w, out);
                return Ok(0);
            }
            if self.defers_block(n) {
                let held = self.block_deferred(w, out);
                self.stats.cache_hits += held as u64;
                return Ok(held);
            }
            let held = w.iter().filter(|&&j| self.cache.holds(self.key(j))).count();
            self.stats.cache_hits += held as u64;
            let mut slots = std::mem::take(&mut self.slot_buf);
            if self.resident(w, &mut slots).is_some() {
                for (k, (&j, &slot)) in w.iter().zip(&slots).enumerate() {
                    self.read_entries(slot, j, w, &mut out[k * n..(k + 1) * n]);
                }
            } else {
                for (k, &j) in w.iter().enumerate() {
                    self.column_entries(j, w, &mut out[k * n..(k + 1) * n])?;
                }
            }
            self.slot_buf = slots;
            Ok(held)
        })
    }

    /// The cache itself, its columns restricted in place to `keep`'s rows (point columns
    /// only: deduplicated ones are over distinct rows), or with `keep` empty the cache emptied;
    /// this backend is left without one.
    fn export_columns(&mut self, keep: &[usize]) -> Option<crate::backend::ColumnExport> {
        if self.distinct.is_some() {
            return None;
        }
        let mut cache = std::mem::replace(&mut self.cache, ColumnCache::new(1, 0));
        if keep.is_empty() {
            let m = cache.len();
            cache.clear_to(m);
            return Some(crate::backend::ColumnExport(Box::new(cache)));
        }
        let m = self.prob.len();
        let mut pos = vec![u32::MAX; m];
        for (k, &i) in keep.iter().enumerate() {
            pos[i] = k as u32;
        }
        cache.restrict(keep, |j| {
            (j < m && pos[j] != u32::MAX).then(|| pos[j] as usize)
        });
        Some(crate::backend::ColumnExport(Box::new(cache)))
    }

    fn adopt_columns(&mut self, cols: crate::backend::ColumnExport) {
        if let Ok(mut cache) = cols.0.downcast::<ColumnCache<T>>()
            && self.distinct.is_none()
        {
            if cache.len() != self.prob.len() {
                cache.clear_to(self.prob.len());
            }
            self.cache = *cache;
        }
    }
}

impl<T: Elem> Ranks for CpuBackend<'_, T> {
    fn gather_own(&mut self, out: &mut Vec<f64>) -> Result<std::ops::Range<usize>> {
        let m = self.prob.len();
        out.resize(m, 0.0);
        let gv = self.grad();
        for (i, o) in out.iter_mut().enumerate() {
            *o = gv.g(i);
        }
        Ok(0..m)
    }
}

impl<T: Elem> Certify for CpuBackend<'_, T> {
    /// The certification from the cached columns of α's support when every one of them is
    /// resident ([`crate::backend::exact::certify_from_columns`]: the same certificate as the
    /// full f64 pass, for |A| multiply-adds a row instead of |A| kernel evaluations); None
    /// otherwise, and the solver certifies on the problem.
    fn certify_exact(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        let m = self.prob.len();
        if self.distinct.is_some()
            || !self.guests.is_empty()
            || self.cache.len() != m
            || alpha.dim() != m
        {
            return Ok(None);
        }
        let mut cols = Vec::with_capacity(alpha.len());
        for &j in alpha.indices() {
            match self.cache.column(j) {
                Some(c) => cols.push(c),
                None => return Ok(None),
            }
        }
        Ok(
            crate::backend::exact::certify_from_columns(self.prob, alpha, &cols)
                .map(|(f, gap, _)| (f, gap)),
        )
    }
}

impl<T: Elem> Guests for CpuBackend<'_, T> {
    fn add_guest(&mut self, row: crate::data::Row<'_>, y: f64, inv_c: f64) -> Result<usize> {
        let norm = row.sq_norm();
        match &mut self.distinct {
            // Columns over the distinct rows: the guest's query norm after theirs.
            Some(dd) => {
                dd.norms.push(norm);
                dd.ones.push(1.0);
            }
            None => {
                if self.guests.is_empty() {
                    self.norms_ext = self.prob.norms.clone();
                    self.y_ext = self.prob.y.clone();
                }
                self.norms_ext.push(norm);
                self.y_ext.push(y);
            }
        }
        self.guests.push(Guest {
            row: crate::data::OwnedRow::from(row),
            norm,
            y,
            inv_c,
        });
        Ok(self.prob.len() + self.guests.len() - 1)
    }
}

impl<T: Elem> Marks for CpuBackend<'_, T> {
    fn fill_marks(&mut self, mk: u8) -> Result<()> {
        self.marks.clear();
        self.marks.resize(self.prob.len(), mk);
        Ok(())
    }

    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()> {
        if self.marks.len() != self.prob.len() {
            self.fill_marks(crate::backend::mark::NONE)?;
        }
        for &(i, mk) in marks {
            self.marks[i] = mk;
        }
        Ok(())
    }

    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction> {
        if self.marks.len() != self.prob.len() {
            return Ok(MarkedReduction::EMPTY);
        }
        let (gv, y, marks) = (self.grad(), &self.prob.y, &self.marks);
        let m = self.prob.len();
        Ok((0..m.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut r = MarkedReduction::EMPTY;
                for i in c * CHUNK..m.min((c + 1) * CHUNK) {
                    let mk = marks[i];
                    if mk != 0 {
                        r.offer(i, gv.g(i) + shift * y[i], mk);
                    }
                }
                r
            })
            .reduce(|| MarkedReduction::EMPTY, |a, b| a.merge(&b)))
    }
}
