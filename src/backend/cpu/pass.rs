//! The CPU backend's passes over the rows: computing columns into the cache (plain and
//! deduplicated rows) with an optional fused update, and the batched update from resident
//! columns.

use super::*;
use crate::backend::simd::LANES;

/// A column of a fused update over deduplicated rows, for the touched rows: (slot, coef, y_j,
/// j, 1/C_j).
type Touching = (usize, f64, f64, usize, f64);

/// Columns to compute as (slot data, column, query buffer), and the batch's queries packed
/// in f32 where the pass packed them ([`crate::backend::simd::Batch`]).
type Slots<'a, T> = (&'a [(SendPtr<T>, usize, usize)], Option<&'a [f32]>);

/// Computes rows r0..r0+len of the columns `cols` — (slot data, column, query buffer) — into
/// their slots: the column part both passes share.
///
/// # Safety
/// Rows r0..r0+len of every slot must be this caller's alone for the duration.
unsafe fn write_columns<T: Elem>(
    args: &ColumnArgs<'_>,
    (cols, q32): Slots<'_, T>,
    qbuf: &[Vec<f64>],
    r0: usize,
    len: usize,
) {
    if cols.is_empty() {
        return;
    }
    let queries: [(usize, &[f64]); BATCH] =
        std::array::from_fn(|c| cols.get(c).map_or((0, &[][..]), |x| (x.1, &qbuf[x.2][..])));
    let mut outs: [&mut [T]; BATCH] = std::array::from_fn(|c| match cols.get(c) {
        // SAFETY: the caller owns these rows of the slot.
        Some(x) => unsafe { std::slice::from_raw_parts_mut(x.0.at(r0), len) },
        None => &mut [],
    });
    let n = cols.len();
    with_dots(|dots| columns_chunk_packed(args, (&queries[..n], q32), r0, dots, &mut outs[..n]));
}

/// The slots of the columns to compute, as (slot data, the column's row in the layout —
/// `key(j)` —, query buffer k) from `compute`'s (slot, j, k).
fn column_slots<T: Elem>(
    cache: &mut ColumnCache<T>,
    compute: &[(usize, usize, usize)],
    key: impl Fn(usize) -> usize,
) -> [(SendPtr<T>, usize, usize); BATCH] {
    assert!(compute.len() <= BATCH);
    let mut cptr = [(SendPtr(std::ptr::null_mut()), 0, 0); BATCH];
    for (c, &(slot, j, k)) in compute.iter().enumerate() {
        cptr[c] = (SendPtr(cache.data_ptr(slot)), key(j), k);
    }
    cptr
}

/// Columns from which a blocked pass packs each row block for the tiles (f32 panels of
/// sixteen rows, or the rows widened to f64 for f64 columns:
/// [`crate::backend::simd::with_row_panels`]) and fetches the next block ahead: packing reads
/// and writes the block once, about what one batch's products cost at many features, so it
/// pays over many batches; with two to seven batches a pass (the class pairs of 784-feature
/// digits, about 1,450 rows each) it was measured 2–7 % slower than without.
const PANEL_COLUMNS: usize = 8 * BATCH;

/// Bytes of feature data a blocked pass keeps hot while it runs a block of rows through every
/// column's batch (about half of a core's L2).
const BLOCK_BYTES: usize = 192 * 1024;

/// What a first write to a fresh 4 KiB page costs (ns): the fault and the page's clearing.
/// Measured with `madvise(MADV_POPULATE_WRITE)` on the 2-core virtual machine of
/// docs/BENCHMARKS.md: 0.3–2.7 µs, the most where the host has not backed the memory lately.
const FAULT_NS: f64 = 1000.0;

impl<T: Elem> CpuBackend<'_, T> {
    /// Records the time of a pass that computed `cols` columns (since `started`, on every
    /// thread of the team, any update the pass folded in included) and tells the cache what a
    /// fresh slot costs against a column: [`FAULT_NS`] per page of the slot over the column's
    /// measured time ([`ColumnCache::set_price`](crate::backend::cache::ColumnCache::set_price)).
    fn note_columns(&mut self, cols: usize, started: std::time::Instant) {
        let m = self.cache.len();
        if cols == 0 || m == 0 {
            return;
        }
        let threads = rayon::current_num_threads() as f64;
        let ns = started.elapsed().as_nanos() as f64 * threads / (cols * m) as f64;
        self.entry_ns = if self.entry_ns > 0.0 {
            0.875 * self.entry_ns + 0.125 * ns
        } else {
            ns
        };
        let fault = FAULT_NS * std::mem::size_of::<T>() as f64 / 4096.0;
        self.cache.set_price(fault / self.entry_ns.max(1e-3));
    }

    /// Computes any number of columns into their cache slots (`compute`: slot, column, query
    /// buffer) in one parallel pass over chunks of rows (no gradient update): within a chunk,
    /// rows a block of [`BLOCK_BYTES`] at a time, each block through the columns in batches
    /// of [`BATCH`]. Every entry is computed as [`pass`](Self::pass) computes it.
    pub(super) fn pass_blocked(&mut self, compute: &[(usize, usize, usize)]) {
        self.pass_blocked_then(compute, |_, _| (f64::INFINITY, usize::MAX));
    }

    /// [`pass_blocked`](Self::pass_blocked), then `then(r0, n)` on each block of rows
    /// r0..r0+n once the block's rows of every column are written (and still in the core's
    /// cache): the least of a chunk's results (the first of equal ones) is recorded as the
    /// chunk's minimum.
    pub(super) fn pass_blocked_then(
        &mut self,
        compute: &[(usize, usize, usize)],
        then: impl Fn(usize, usize) -> (f64, usize) + Sync,
    ) {
        let started = std::time::Instant::now();
        let m = self.prob.len();
        let args = ColumnArgs {
            layout: &self.layout,
            kernel: self.prob.kernel,
            norms: if self.guests.is_empty() {
                &self.prob.norms
            } else {
                &self.norms_ext
            },
            y: if self.guests.is_empty() {
                &self.prob.y
            } else {
                &self.y_ext
            },
            rbf_table: self.rbf_table.as_ref(),
        };
        let row_bytes = match &self.layout {
            Layout::Dense { d, .. } => 4 * d,
            Layout::Hybrid { cont, words, .. } => 4 * cont.len() + 8 * words,
            Layout::Binary { words, .. } => 8 * words,
            Layout::Sparse { indptr, .. } => 8 * indptr[indptr.len() - 1] / m.max(1),
        }
        .max(1);
        // Whole pairs of blocks of LANES rows: the f32 product's micro-kernel takes two at a time.
        let block = (BLOCK_BYTES / row_bytes / (2 * LANES) * (2 * LANES)).clamp(2 * LANES, CHUNK);
        let cache = &mut self.cache;
        let cptr: Vec<(SendPtr<T>, usize, usize)> = compute
            .iter()
            .map(|&(slot, j, k)| (SendPtr(cache.data_ptr(slot)), j, k))
            .collect();
        // Every full batch of dense queries packed once for all the blocks of rows, where the
        // f32 tiles take them.
        let mut packed = std::mem::take(&mut self.packed);
        packed.resize_with(cptr.len() / BATCH, Vec::new);
        if let Layout::Dense { d, .. } = &self.layout
            && T::SINGLE
            && crate::backend::simd::packs_queries(*d)
        {
            for (p, batch) in packed.iter_mut().zip(cptr.chunks_exact(BATCH)) {
                let q: [&[f64]; BATCH] = std::array::from_fn(|c| &self.qbuf[batch[c].2][..]);
                pack_queries(&q, *d, p);
            }
        } else {
            packed.iter_mut().for_each(Vec::clear);
        }
        let (qbuf, args, prob, cptr, packed_ref) = (&self.qbuf, &args, self.prob, &cptr, &packed);
        crate::team::map_into(
            m.div_ceil(CHUNK),
            |c| {
                let (r0, n) = (c * CHUNK, CHUNK.min(m - c * CHUNK));
                let mut best = (f64::INFINITY, usize::MAX);
                for b0 in (r0..r0 + n).step_by(block) {
                    let len = block.min(r0 + n - b0);
                    // The next block of the chunk, fetched while this one runs.
                    let next = (b0 + len, block.min((r0 + n).saturating_sub(b0 + len)));
                    let panels = cptr.len() >= PANEL_COLUMNS;
                    let parts = cptr.len().div_ceil(BATCH);
                    let batches = || {
                        for (bi, batch) in cptr.chunks(BATCH).enumerate() {
                            if panels {
                                crate::backend::simd::prefetch_rows(
                                    args,
                                    next.0,
                                    next.1,
                                    (bi, parts),
                                );
                            }
                            let q32 = packed_ref.get(bi).filter(|p| !p.is_empty()).map(|p| &p[..]);
                            // SAFETY: chunk c owns rows r0..r0+n of every column buffer.
                            unsafe { write_columns(args, (batch, q32), qbuf, b0, len) };
                        }
                    };
                    if panels {
                        crate::backend::simd::with_row_panels(args, (b0, len), T::SINGLE, batches);
                    } else {
                        batches();
                    }
                    for (col, j, _) in cptr {
                        if (b0..b0 + len).contains(j) {
                            // SAFETY: as above (row j is in this block of the chunk).
                            let e = unsafe { &mut *col.at(*j) };
                            *e = T::from_f64(e.to_f64() + prob.inv_c(*j));
                        }
                    }
                    // The block's rows of every column are still in the core's cache; the
                    // first of equal minima (blocks in ascending order) is the chunk's.
                    let r = then(b0, len);
                    if r.0 < best.0 {
                        best = r;
                    }
                }
                best
            },
            &mut self.chunk_min,
        );
        self.packed = packed;
        for &(slot, _, _) in compute {
            self.cache.mark_valid(slot);
        }
        self.stats.columns_computed += compute.len() as u64;
        self.note_columns(compute.len(), started);
    }

    /// One fused parallel pass: compute the listed columns into their cache slots, then (if
    /// `up` is given) apply the gradient update and record per-chunk minima.
    pub(super) fn pass(&mut self, compute: &[(usize, usize, usize)], up: Option<FusedUpdate>) {
        // Deduplicated rows: their data is lent to the pass, which reads every other field.
        if let Some(mut dd) = self.distinct.take() {
            self.pass_distinct(&mut dd, compute, up);
            self.distinct = Some(dd);
            return;
        }
        let started = std::time::Instant::now();
        let m = self.prob.len();
        let nchunks = m.div_ceil(CHUNK);
        let args = ColumnArgs {
            layout: &self.layout,
            kernel: self.prob.kernel,
            norms: if self.guests.is_empty() {
                &self.prob.norms
            } else {
                &self.norms_ext
            },
            y: if self.guests.is_empty() {
                &self.prob.y
            } else {
                &self.y_ext
            },
            rbf_table: self.rbf_table.as_ref(),
        };
        let cptr = column_slots(&mut self.cache, compute, |j| j);
        let ncomp = compute.len();
        let mut ucols: [(SendPtr<T>, f64); 2] = [(SendPtr(std::ptr::null_mut()), 0.0); 2];
        let mut nu = 0;
        let (mut scale, mut pc, mut rotate) = (1.0, 0.0, false);
        if let Some((cols, s, p, r)) = up {
            for (slot, coef) in cols.iter().flatten() {
                ucols[nu] = (SendPtr(self.cache.data_ptr(*slot)), *coef);
                nu += 1;
            }
            (scale, pc, rotate) = (s, p, r);
        }
        let has_up = up.is_some();
        let gptr = SendPtr(self.g.as_mut_ptr());
        let gpptr = SendPtr(self.gp.as_mut_ptr());
        let prev = self.prev;
        let prob = self.prob;
        let qbuf = &self.qbuf;
        let args = &args;
        crate::team::map_into(
            nchunks,
            |c| {
                let r0 = c * CHUNK;
                let n = CHUNK.min(m - r0);
                // SAFETY: chunk c owns rows r0..r0+n of every column buffer.
                unsafe { write_columns(args, (&cptr[..ncomp], None), qbuf, r0, n) };
                for &(ref col, j, _) in &cptr[..ncomp] {
                    if (r0..r0 + n).contains(&j) {
                        // SAFETY: as above (row j is in this chunk).
                        let e = unsafe { &mut *col.at(j) };
                        *e = T::from_f64(e.to_f64() + prob.inv_c(j));
                    }
                }
                if !has_up {
                    return (f64::INFINITY, usize::MAX);
                }
                // SAFETY: as above, rows r0..r0+n of g and g⁻ belong to this chunk; the column
                // slots are only read.
                let g = unsafe { std::slice::from_raw_parts_mut(gptr.at(r0), n) };
                let gp: &mut [f64] = if prev {
                    // SAFETY: as for g: rows r0..r0+n of g⁻ belong to this chunk.
                    unsafe { std::slice::from_raw_parts_mut(gpptr.at(r0), n) }
                } else {
                    &mut []
                };
                let col = |u: usize| -> &[T] {
                    if nu > u {
                        // SAFETY: column slot u holds m entries; rows r0..r0+n are only read.
                        unsafe { std::slice::from_raw_parts(ucols[u].0.at(r0), n) }
                    } else {
                        &[]
                    }
                };
                let upd = ChunkUpdate {
                    scale,
                    pc,
                    rotate,
                    cols: [(col(0), ucols[0].1), (col(1), ucols[1].1)],
                    nu,
                    rep: None,
                    distinct: 0,
                    base: 0,
                };
                update::apply(g, gp, &upd);
                match update::argmin(g) {
                    (_, usize::MAX) => (f64::INFINITY, usize::MAX),
                    (v, k) => (v, r0 + k),
                }
            },
            &mut self.chunk_min,
        );
        for &(slot, _, _) in compute {
            self.cache.mark_valid(slot);
        }
        self.stats.columns_computed += ncomp as u64;
        self.note_columns(ncomp, started);
        self.min_valid = has_up;
    }

    /// [`pass`](Self::pass) over deduplicated rows: one parallel pass over chunks of distinct
    /// rows, each computing its entries of the listed columns (k + 1 per distinct row), then
    /// updating the groups of those rows (see [`Groups`]) and taking their minimum. `compute`
    /// and `up` name original columns j; slots hold distinct columns.
    fn pass_distinct(
        &mut self,
        dd: &mut Distinct,
        compute: &[(usize, usize, usize)],
        up: Option<FusedUpdate>,
    ) {
        let has_up = up.is_some();
        let (ucols, tcols, nu) = self.group_columns(&mut dd.groups, up.map(|u| u.0));
        let (scale, pc, rotate) = up.map_or((1.0, 0.0, false), |u| (u.1, u.2, u.3));
        let (n, m) = (dd.n, self.prob.len());
        let args = ColumnArgs {
            layout: &self.layout,
            kernel: self.prob.kernel,
            norms: &dd.norms,
            y: &dd.ones,
            rbf_table: self.rbf_table.as_ref(),
        };
        let cptr = column_slots(&mut self.cache, compute, |j| distinct_key(dd, m, j));
        let ncomp = compute.len();
        let gr = &mut dd.groups;
        let prev = self.prev;
        let hptr = SendPtr(gr.h.as_mut_ptr());
        let hpptr = SendPtr(gr.hp.as_mut_ptr());
        let gr = &*gr;
        let qbuf = &self.qbuf;
        let args = &args;
        crate::team::map_into(
            n.div_ceil(CHUNK),
            |c| {
                let r0 = c * CHUNK;
                let len = CHUNK.min(n - r0);
                // SAFETY: chunk c owns distinct rows r0..r0+len of every column buffer.
                unsafe { write_columns(args, (&cptr[..ncomp], None), qbuf, r0, len) };
                if !has_up {
                    return (f64::INFINITY, usize::MAX);
                }
                let (k0, k1) = (gr.by_rep[r0] as usize, gr.by_rep[r0 + len] as usize);
                // SAFETY: the groups of distinct rows r0..r0+len (k0..k1) belong to this
                // chunk, and so do those rows' column entries (written above, by this task
                // only); nothing else in the groups is written during the pass.
                let h = unsafe { std::slice::from_raw_parts_mut(hptr.at(k0), k1 - k0) };
                let hp: &mut [f64] = if prev {
                    // SAFETY: as for h: the groups k0..k1 of h⁻ belong to this chunk.
                    unsafe { std::slice::from_raw_parts_mut(hpptr.at(k0), k1 - k0) }
                } else {
                    &mut []
                };
                let col = |u: usize| -> &[T] {
                    if nu > u {
                        // SAFETY: column slot u holds an entry per distinct row; rows
                        // r0..r0+len are only read.
                        unsafe { std::slice::from_raw_parts(ucols[u].0.at(r0), len) }
                    } else {
                        &[]
                    }
                };
                let upd = ChunkUpdate {
                    scale,
                    pc,
                    rotate,
                    cols: [(col(0), ucols[0].1), (col(1), ucols[1].1)],
                    nu,
                    rep: Some(&gr.signed[k0..k1]),
                    distinct: len,
                    base: r0 as u32,
                };
                update::apply(h, hp, &upd);
                let min = update::min_open(h, &gr.closed[k0..k1]);
                gr.chunk_row(k0, h, min)
            },
            &mut self.chunk_min,
        );
        for &(slot, _, _) in compute {
            self.cache.mark_valid(slot);
        }
        self.stats.columns_computed += ncomp as u64;
        if has_up {
            self.update_touched_rows(dd, &tcols[..nu], (scale, pc, rotate));
        }
        self.min_valid = has_up;
    }

    /// The fused update's columns over deduplicated rows: for the groups, (slot data,
    /// coef · y_j); for the touched rows, (slot, coef, y_j, j, 1/C_j); and how many. The
    /// update's own rows are touched: they keep their g from now on (guests are no rows here).
    #[allow(clippy::type_complexity)]
    fn group_columns(
        &mut self,
        gr: &mut Groups,
        cols: Option<[Option<(usize, f64)>; 2]>,
    ) -> ([(SendPtr<T>, f64); 2], [Touching; 2], usize) {
        let m = self.prob.len();
        let mut ucols: [(SendPtr<T>, f64); 2] = [(SendPtr(std::ptr::null_mut()), 0.0); 2];
        let mut tcols = [(0usize, 0.0f64, 0.0f64, usize::MAX, 0.0f64); 2];
        let mut nu = 0;
        let Some(cols) = cols else {
            return (ucols, tcols, 0);
        };
        for (k, c) in cols.iter().enumerate() {
            if let Some((slot, coef)) = *c {
                let j = self.up_j[k];
                // A guest's column has no diagonal entry among these rows.
                let (y, inv_c) = if j < m {
                    (self.prob.y[j], self.prob.inv_c(j))
                } else {
                    (self.guests[j - m].y, 0.0)
                };
                ucols[nu] = (SendPtr(self.cache.data_ptr(slot)), coef * y);
                tcols[nu] = (slot, coef, y, j, inv_c);
                nu += 1;
            }
        }
        let mut js = [0usize; 2];
        let mut nj = 0;
        for &(_, _, _, j, _) in &tcols[..nu] {
            if j < m {
                js[nj] = j;
                nj += 1;
            }
        }
        gr.touch_rows(&js[..nj]);
        (ucols, tcols, nu)
    }

    /// The touched rows' own entries of a fused update over deduplicated rows, as a backend
    /// without groups updates them: Q_ij = y_i y_j (k + 1), plus 1/C_j on the diagonal, times
    /// the column's coefficient; then their minimum joins the chunk minima.
    fn update_touched_rows(
        &mut self,
        dd: &mut Distinct,
        tcols: &[Touching],
        (scale, pc, rotate): (f64, f64, bool),
    ) {
        let Distinct {
            rep, groups: gr, ..
        } = dd;
        let (cache, y) = (&self.cache, &self.prob.y);
        let nu = tcols.len();
        let cols: [&[T]; 2] =
            std::array::from_fn(|u| if u < nu { cache.data(tcols[u].0) } else { &[] });
        gr.update_touched(scale, pc, rotate, nu, |i, u| {
            let (_, coef, yj, j, inv_c) = tcols[u];
            let mut q = y[i] * yj * cols[u][rep[i] as usize].to_f64();
            if i == j {
                q += inv_c;
            }
            coef * q
        });
        self.chunk_min.push(gr.touched_min());
    }

    /// g ← scale·g + Σ c_k·Q[:, j_k] in one parallel pass over the rows (or the groups of
    /// deduplicated rows), every column already resident in `slots`, with the chunk minima of
    /// the new g. Each chunk applies the columns two at a time with the arithmetic of
    /// [`update`](Backend::update), so the result is the same, bit for bit, as one update per
    /// pair ([`super::update_by_pairs`]) — but the chunk's g stays in cache across the pairs.
    pub(super) fn update_resident(&mut self, scale: f64, cols: &[(usize, f64)], slots: &[usize]) {
        let m = self.prob.len();
        let mut ptrs = std::mem::take(&mut self.ptr_buf);
        ptrs.clear();
        for (&s, &(j, c)) in slots.iter().zip(cols) {
            // Deduplicated columns carry no labels: the coefficient takes y_j.
            let c = if self.distinct.is_some() {
                c * self.point(j).2
            } else {
                c
            };
            ptrs.push((SendPtr(self.cache.data_ptr(s)), c));
        }
        match self.distinct.as_mut() {
            None => {
                let gptr = SendPtr(self.g.as_mut_ptr());
                let ptrs = &ptrs;
                crate::team::map_into(
                    m.div_ceil(CHUNK),
                    |c| {
                        let r0 = c * CHUNK;
                        let n = CHUNK.min(m - r0);
                        // SAFETY: rows r0..r0+n of g belong to this chunk; columns are read.
                        let g = unsafe { std::slice::from_raw_parts_mut(gptr.at(r0), n) };
                        apply_by_pairs(g, ptrs, r0, n, scale, None);
                        match update::argmin(g) {
                            (_, usize::MAX) => (f64::INFINITY, usize::MAX),
                            (v, k) => (v, r0 + k),
                        }
                    },
                    &mut self.chunk_min,
                );
            }
            Some(Distinct { n, groups: gr, .. }) => {
                let n = *n;
                for &(j, _) in cols {
                    if j < m {
                        gr.touch_rows(&[j]);
                    }
                }
                let hptr = SendPtr(gr.h.as_mut_ptr());
                let (grr, ptrs) = (&*gr, &ptrs);
                crate::team::map_into(
                    n.div_ceil(CHUNK),
                    |c| {
                        let r0 = c * CHUNK;
                        let len = CHUNK.min(n - r0);
                        let (k0, k1) = (grr.by_rep[r0] as usize, grr.by_rep[r0 + len] as usize);
                        // SAFETY: the groups of distinct rows r0..r0+len belong to this chunk.
                        let h = unsafe { std::slice::from_raw_parts_mut(hptr.at(k0), k1 - k0) };
                        apply_by_pairs(h, ptrs, r0, len, scale, Some(&grr.signed[k0..k1]));
                        let min = update::min_open(h, &grr.closed[k0..k1]);
                        grr.chunk_row(k0, h, min)
                    },
                    &mut self.chunk_min,
                );
            }
        }

        if self.distinct.is_some() {
            // The touched rows' own entries, in column order as updates by pairs add them
            // (`pass_distinct`'s arithmetic: a_u·(y_i y_j k̃ + δ_ij/C_j)): computed where they
            // are used for bit rows, else read from the columns.
            if !self.update_touched_in_place(scale, cols)
                && let Some(Distinct {
                    n, rep, groups: gr, ..
                }) = self.distinct.as_mut()
            {
                let (n, prob, guests) = (*n, self.prob, &self.guests);
                let ptrs = &ptrs;
                gr.update_touched_many(scale, cols.len(), |i, u| {
                    let ((p, _), (j, c)) = (ptrs[u], cols[u]);
                    let (yj, inv_c) = if j < m {
                        (prob.y[j], prob.inv_c(j))
                    } else {
                        (guests[j - m].y, 0.0)
                    };
                    // SAFETY: a resident deduplicated column of n entries, only read.
                    let col = unsafe { std::slice::from_raw_parts(p.at(0), n) };
                    let mut q = prob.y[i] * yj * col[rep[i] as usize].to_f64();
                    if i == j {
                        q += inv_c;
                    }
                    c * q
                });
            }
            if let Some(dd) = &self.distinct {
                self.chunk_min.push(dd.groups.touched_min());
            }
        }
        self.ptr_buf = ptrs;
        self.min_valid = true;
        self.stats.updates += cols.len().div_ceil(2) as u64;
    }
}
