//! Columns computed when the update needs them ([`CpuBackend::defers_columns`]): the
//! working-set solver's block Q_WW reads the columns the cache holds and computes only the
//! q entries of each other one, over W's rows gathered apart; the update then computes the
//! columns whose coefficient moved in the pass that folds them into g, each block of rows
//! written into the cache and read back while it is still in the core's cache. A point of W
//! whose coefficient the inner solve left alone costs q entries instead of a column, and a
//! fresh column is read from memory once instead of twice. The entries are those a column
//! computed in full holds, bit for bit.

use super::{CHUNK, CpuBackend, SendPtr, apply_by_pairs, with_dots};
#[cfg(doc)]
use crate::backend::simd::F32_DOTS_MIN_D;
use crate::backend::simd::{BATCH, ColumnArgs, Elem, Layout, columns_chunk, narrow_rows};
use crate::backend::update;

/// Bytes of a block's columns from which the block defers them: beyond about a core's L2,
/// a column computed in the block has left the core's cache by the time the update reads it.
const DEFER_MIN_BYTES: usize = 1 << 21;

/// W's rows, norms and labels, and a batch of columns' entries at W's rows (kept between
/// calls).
pub(super) struct AtW<T> {
    rows: Option<Layout<'static>>,
    norms: Vec<f64>,
    y: Vec<f64>,
    cols: Vec<T>,
}

impl<T> Default for AtW<T> {
    fn default() -> Self {
        AtW {
            rows: None,
            norms: Vec::new(),
            y: Vec::new(),
            cols: Vec::new(),
        }
    }
}

impl<T: Elem> CpuBackend<'_, T> {
    /// True when the update computes the columns it lacks in its own pass, and a block of
    /// at least [`DEFER_MIN_BYTES`] of columns leaves them to it: cached columns (not computed
    /// in place), plain rows (no deduplicated ones), no guests.
    pub(super) fn defers_columns(&self) -> bool {
        !self.computes_in_place() && self.distinct.is_none() && self.guests.is_empty()
    }

    /// Whether a block of `q` columns defers them ([`Self::defers_columns`]): from
    /// [`DEFER_MIN_BYTES`] of columns on, and at any size where a column is as cheap computed
    /// in the update's pass as in the block's ([`Self::columns_cost_alike`]). There a point of
    /// W that the inner solve leaves alone costs q entries instead of a column, which on small
    /// problems is most of W: pendigits' 45 class pairs of about 1,500 points computed 3,903
    /// columns instead of 7,685 (0.874× wall, the same model).
    pub(super) fn defers_block(&self, q: usize) -> bool {
        self.defers_columns()
            && (q * self.prob.len() * std::mem::size_of::<T>() >= DEFER_MIN_BYTES
                || self.columns_cost_alike())
    }

    /// True for narrow rows (fewer than [`F32_DOTS_MIN_D`] continuous features, dense or the
    /// continuous part of hybrid rows: [`narrow_rows`]), whose columns cost about the same in
    /// a pass of a few columns as in the block's batch (the fused path). With more features
    /// the block's batched tiles reuse each load of the rows across its columns, which a
    /// deferred column in the update's pass gives up (usps, 256 features: 1.05× slower
    /// deferred below [`DEFER_MIN_BYTES`]; its 784-feature upsampling 1.13×).
    fn columns_cost_alike(&self) -> bool {
        narrow_rows(&self.layout)
    }

    /// Q_WW (row-major, `out`) for [`Self::defers_columns`] backends: the columns the cache
    /// holds read from it (their place in the LRU order renewed), each other one computed at
    /// W's rows only. Returns how many the cache held.
    pub(super) fn block_deferred(&mut self, w: &[usize], out: &mut [f64]) -> usize {
        let n = w.len();
        let mut missing = std::mem::take(&mut self.slot_buf);
        missing.clear();
        for (k, &j) in w.iter().enumerate() {
            if self.cache.holds(j) {
                let (slot, _) = self.cache.get_or_assign(j, None);
                self.read_entries(slot, j, w, &mut out[k * n..(k + 1) * n]);
            } else {
                missing.push(k);
            }
        }
        let held = n - missing.len();
        if !missing.is_empty() {
            self.entries_at(w, &missing, out);
        }
        self.slot_buf = missing;
        held
    }

    /// Column w\[k\]'s entries at W's rows into row k of `out` (n × n) for each k of
    /// `missing`: W's rows gathered from the layout, the queries in batches as a pass takes
    /// them, the 1/C diagonal added in the column's precision.
    fn entries_at(&mut self, w: &[usize], missing: &[usize], out: &mut [f64]) {
        let n = w.len();
        let prob = self.prob;
        let mut at = std::mem::take(&mut self.at_w);
        self.layout.gather_into(w, &mut at.rows);
        let sub = at.rows.take().expect("gathered rows");
        at.norms.clear();
        at.norms.extend(w.iter().map(|&i| prob.norms[i]));
        at.y.clear();
        at.y.extend(w.iter().map(|&i| prob.y[i]));
        at.cols.resize(BATCH * n, T::default());
        for batch in missing.chunks(BATCH) {
            self.grow_queries(batch.len());
            for (u, &k) in batch.iter().enumerate() {
                self.load_query(u, w[k]);
            }
            let args = ColumnArgs {
                layout: &sub,
                kernel: prob.kernel,
                norms: &at.norms,
                y: &at.y,
                rbf_table: self.rbf_table.as_ref(),
            };
            let queries: [(usize, &[f64]); BATCH] = std::array::from_fn(|u| {
                batch
                    .get(u)
                    .map_or((0, &[][..]), |&k| (k, &self.qbuf[u][..]))
            });
            let mut cols = at.cols.chunks_exact_mut(n);
            let mut outs: [&mut [T]; BATCH] =
                std::array::from_fn(|_| cols.next().unwrap_or_default());
            let b = batch.len();
            for r0 in (0..n).step_by(CHUNK) {
                let len = CHUNK.min(n - r0);
                let mut parts: [&mut [T]; BATCH] = std::array::from_fn(|_| &mut [][..]);
                for (p, o) in parts.iter_mut().zip(outs.iter_mut()).take(b) {
                    *p = &mut o[r0..r0 + len];
                }
                with_dots(|dots| columns_chunk(&args, &queries[..b], r0, dots, &mut parts[..b]));
            }
            for (&k, col) in batch.iter().zip(outs.iter_mut()) {
                col[k] = T::from_f64(col[k].to_f64() + prob.inv_c(w[k]));
                for (o, e) in out[k * n..(k + 1) * n].iter_mut().zip(col.iter()) {
                    *o = e.to_f64();
                }
            }
        }
        at.rows = Some(sub);
        self.at_w = at;
    }

    /// Query buffers for at least `k` columns.
    pub(super) fn grow_queries(&mut self, k: usize) {
        while self.qbuf.len() < k {
            let d = self.qbuf[0].len();
            self.qbuf.push(vec![0.0; d]);
            self.qset.push(Some(Vec::new()));
        }
    }

    /// g ← scale·g + Σ c·Q[:, j] over `cols` for [`Self::defers_columns`] backends, in one
    /// pass: each block of rows computes its rows of the columns the cache lacks into their
    /// slots, then applies every column two at a time in the order of `cols`, as
    /// [`Self::update_resident`] does. False (nothing done) when the cache cannot hold them
    /// all at once.
    pub(super) fn update_deferred(&mut self, scale: f64, cols: &[(usize, f64)]) -> bool {
        let need = 2 * cols.len() + 2;
        if need > self.cache.capacity() {
            return false;
        }
        self.cache.ensure_usable(need);
        let mut compute = std::mem::take(&mut self.compute_buf);
        let mut slots = std::mem::take(&mut self.slot_buf);
        let mut ptrs = std::mem::take(&mut self.ptr_buf);
        compute.clear();
        slots.clear();
        ptrs.clear();
        for &(j, _) in cols {
            let (slot, hit) = self.cache.get_or_assign(j, None);
            if !hit {
                let k = compute.len();
                self.grow_queries(k + 1);
                self.load_query(k, j);
                compute.push((slot, j, k));
            }
            slots.push(slot);
        }
        // The pointers once every slot is assigned: assigning may move the cache's region.
        for (&slot, &(_, c)) in slots.iter().zip(cols) {
            ptrs.push((SendPtr(self.cache.data_ptr(slot)), c));
        }
        self.slot_buf = slots;
        let m = self.prob.len();
        let gptr = SendPtr(self.g.as_mut_ptr());
        {
            let ptrs = &ptrs;
            self.pass_blocked_then(&compute, move |r0, n| {
                debug_assert!(r0 + n <= m);
                // SAFETY: rows r0..r0+n of g belong to this block of a chunk (r0 + n ≤ m); the
                // columns' rows are read only, after this block wrote them.
                let g = unsafe { std::slice::from_raw_parts_mut(gptr.at(r0), n) };
                apply_by_pairs(g, ptrs, r0, n, scale, None);
                match update::argmin(g) {
                    (_, usize::MAX) => (f64::INFINITY, usize::MAX),
                    (v, k) => (v, r0 + k),
                }
            });
        }
        self.compute_buf = compute;
        self.ptr_buf = ptrs;
        self.min_valid = true;
        self.stats.updates += cols.len().div_ceil(2) as u64;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::ActiveSet;
    use crate::backend::Backend;
    use crate::backend::cpu::tests::random_problem;
    use crate::backend::cpu::{CpuConfig, Precision};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::problem::Problem;
    use crate::rng::SplitMix64;

    /// A deferred block and update against the cached columns of a backend that computes
    /// them in full: Q_WW bit for bit (every column missing, then some held), g after the
    /// update bit for bit, and the columns the update left in the cache bit for bit.
    fn check_deferred<T: Elem>(prob: &Problem<'_>, precision: Precision, kind: &str) {
        let m = prob.len();
        let cfg = CpuConfig {
            cache_bytes: 64 << 20,
            precision: Some(precision),
            ..CpuConfig::default()
        };
        let (mut lazy, mut full) = (
            CpuBackend::<T>::new(prob, cfg),
            CpuBackend::<T>::new(prob, cfg),
        );
        assert!(lazy.defers_columns(), "{kind}");
        let layout = match &lazy.layout {
            Layout::Dense { .. } => "dense",
            Layout::Hybrid { .. } => "hybrid",
            Layout::Binary { .. } => "binary",
            Layout::Sparse { .. } => "sparse",
        };
        assert_eq!(layout, kind);
        let mut a = ActiveSet::new(m);
        a.set(5, 1.0);
        lazy.set_alpha(&a).unwrap();
        full.set_alpha(&a).unwrap();
        // Thirteen points: a batch of eight and a partial one, rows in every block.
        let w: Vec<usize> = [
            5usize,
            17,
            m - 4,
            m - 1,
            300,
            2048,
            2049,
            9,
            1000,
            4000,
            2,
            8,
            16,
        ]
        .to_vec();
        let n = w.len();
        let block = |be: &mut CpuBackend<'_, T>, deferred: bool| {
            let mut q = vec![0.0; n * n];
            if deferred {
                be.block_deferred(&w, &mut q);
            } else {
                for (k, &j) in w.iter().enumerate() {
                    be.column_entries(j, &w, &mut q[k * n..(k + 1) * n])
                        .unwrap();
                }
            }
            q
        };
        assert_eq!(
            block(&mut lazy, true),
            block(&mut full, false),
            "{kind}: fresh"
        );
        // The update: columns of W whose coefficient moved, one of them held.
        let cols: Vec<(usize, f64)> = w
            .iter()
            .step_by(2)
            .map(|&j| (j, 0.1 + j as f64 * 1e-4))
            .collect();
        assert!(lazy.update_deferred(0.9, &cols), "{kind}");
        crate::backend::update_by_pairs(&mut full, 0.9, &cols).unwrap();
        let idx: Vec<usize> = (0..m).collect();
        let (mut gl, mut gf) = (vec![0.0; m], vec![0.0; m]);
        lazy.gather(&idx, &mut gl).unwrap();
        full.gather(&idx, &mut gf).unwrap();
        assert_eq!(gl, gf, "{kind}: g");
        assert_eq!(lazy.reduce(&a).unwrap().s, full.reduce(&a).unwrap().s);
        for &(j, _) in &cols {
            assert!(lazy.cache.holds(j), "{kind}: column {j} cached");
            let (mut cl, mut cf) = (vec![0.0; m], vec![0.0; m]);
            lazy.column_entries(j, &idx, &mut cl).unwrap();
            full.column_entries(j, &idx, &mut cf).unwrap();
            assert_eq!(cl, cf, "{kind}: column {j}");
        }
        assert_eq!(
            block(&mut lazy, true),
            block(&mut full, false),
            "{kind}: some held"
        );
    }

    /// Below DEFER_MIN_BYTES of columns a block defers them only where they cost alike in
    /// the update's pass: rows of few continuous features, not f32 tiles' many or sparse rows.
    #[test]
    fn small_blocks_defer_where_columns_cost_alike() {
        let cfg = CpuConfig {
            cache_bytes: 64 << 20,
            precision: Some(Precision::F32),
            ..CpuConfig::default()
        };
        let small = |d: usize, sparse: bool| {
            let (ds, y) = random_problem(600, d, sparse, 5);
            let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.1 }, 3.0).unwrap();
            let be = CpuBackend::<f32>::new(&prob, cfg);
            const { assert!(64 * 600 * 4 < DEFER_MIN_BYTES) };
            (be.defers_block(64), be.defers_block(DEFER_MIN_BYTES))
        };
        assert_eq!(small(7, false), (true, true), "7 dense features");
        assert_eq!(small(40, false), (false, true), "40 dense features");
        assert_eq!(small(300, true), (false, true), "sparse rows");
    }

    #[test]
    fn deferred_columns_are_the_cached_columns_bit_for_bit() {
        let gamma = Kernel::Rbf { gamma: 0.3 };
        let (ds, y) = random_problem(5003, 7, false, 3);
        let prob = Problem::new(&ds, y, gamma, 3.0).unwrap();
        check_deferred::<f32>(&prob, Precision::F32, "dense");
        check_deferred::<f64>(&prob, Precision::F64, "dense");
        // Products in f32 tiles (many features).
        let (ds, y) = random_problem(5003, 40, false, 4);
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.05 }, 3.0).unwrap();
        check_deferred::<f32>(&prob, Precision::F32, "dense");
        let ds = crate::backend::simd::tests::mixed_rows(5003, 23, 5, true);
        let y = ds.labels.clone();
        let prob = Problem::new(&ds, y, gamma, 3.0).unwrap();
        check_deferred::<f32>(&prob, Precision::F32, "hybrid");
        check_deferred::<f64>(&prob, Precision::F64, "hybrid");
        let (ds, y) = random_problem(5003, 300, true, 6);
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.02 }, 3.0).unwrap();
        check_deferred::<f32>(&prob, Precision::F32, "sparse");
        // Bit rows: f64 columns (f32 ones are computed in place).
        let (m, mut r) = (5003usize, SplitMix64::new(7));
        let (mut ip, mut ix, mut y) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            let mut row: Vec<u32> = (0..14).map(|_| (r.next_f64() * 123.0) as u32).collect();
            row.sort_unstable();
            row.dedup();
            ix.extend(row);
            ip.push(ix.len());
            y.push(if r.next_f64() < 0.4 { 1.0 } else { -1.0 });
        }
        let vs = vec![1.0f32; ix.len()];
        let ds = Dataset::from_csr(123, ip, ix, vs, y.clone());
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.07 }, 3.0).unwrap();
        check_deferred::<f64>(&prob, Precision::F64, "binary");
        let poly = Kernel::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 3,
        };
        let (ds, y) = random_problem(5003, 7, false, 8);
        let prob = Problem::new(&ds, y, poly, 3.0).unwrap();
        check_deferred::<f32>(&prob, Precision::F32, "dense");
    }
}
