//! Columns computed where they are used ([`CpuBackend::computes_in_place`]): the working-set
//! solver's block Q_WW and its update of g compute their kernel entries in chunk-sized
//! buffers instead of writing whole columns into the cache and reading them back, where an
//! entry costs less to compute than its bytes cost to move (bit rows by table lookup, dense
//! rows of a few features). The entries are those the cached columns hold, bit for bit.

use super::{CHUNK, CpuBackend, SendPtr, apply_pair, with_dots};
use crate::backend::simd::{ColumnArgs, Elem, Layout, columns_chunk};
use crate::backend::update;

/// Dense rows of at most this many features compute their columns in place.
const IN_PLACE_MAX_D: usize = 4;
/// Bytes of a block's columns from which narrow dense rows compute them in place
/// ([`CpuBackend::blocks_in_place`]): about a core's L2, beyond which a cached column is read
/// back from memory.
const IN_PLACE_BLOCK_MIN_BYTES: usize = 1 << 21;
/// Columns of a block from which narrow dense rows compute them in place: the working-set
/// solver's smallest automatic block on the CPU where not most points are support vectors.
const IN_PLACE_BLOCK_MIN_Q: usize = 64;
/// Columns an in-place update computes per call over a chunk of rows.
const IN_PLACE_BATCH: usize = crate::backend::simd::BATCH;

impl<T: Elem> CpuBackend<'_, T> {
    /// True when columns cost less to compute than to read back from memory, so the
    /// working-set solver's block and update compute their entries where they are used
    /// ([`Self::update_in_place`]) and the cache is left alone: bit rows under the RBF kernel
    /// with f32 entries, a table lookup each ([`crate::backend::simd::RbfTable`]; a9a: a column of
    /// 32,561 rows in about 10 µs, while reading a cached one back from memory takes as long
    /// and writing it into the cache longer), and dense rows of at most [`IN_PLACE_MAX_D`]
    /// features (a few multiply-adds and an exponential per entry against four or eight bytes
    /// of memory traffic, and no cache capacity to cap the working set: the noisy
    /// checkerboard). No deduplicated rows, no guests.
    pub(super) fn computes_in_place(&self) -> bool {
        self.distinct.is_none()
            && self.guests.is_empty()
            && match &self.layout {
                Layout::Binary { .. } => T::SINGLE && self.rbf_table.is_some(),
                Layout::Dense { d, .. } => *d <= IN_PLACE_MAX_D,
                _ => false,
            }
    }

    /// Whether a block of `q` columns, and the update after it, compute their entries in place:
    /// always where [`Self::computes_in_place`]; and for narrow dense rows (fewer than
    /// [`crate::backend::simd::F32_DOTS_MIN_D`] features, whose RBF columns the fused f32
    /// kernel forms in registers) with f32 entries, from [`IN_PLACE_BLOCK_MIN_Q`] columns
    /// taking [`IN_PLACE_BLOCK_MIN_BYTES`] on: the block's columns would leave the core's cache
    /// before they are read again, and each is read back from memory at a cost above its
    /// multiply-adds and exponential. The smaller blocks where most points are support vectors
    /// (32 columns, each used again within a few outer iterations) keep the cache. Measured
    /// (alternated pairs, whole process, the same models): generated sets of 6–24 features and
    /// 30,000–120,000 rows 0.66–0.88× the cached columns' time, against 0.97–1.02× where the
    /// block is the small one throughout.
    pub(super) fn blocks_in_place(&self, q: usize) -> bool {
        self.computes_in_place()
            || (T::SINGLE
                && self.distinct.is_none()
                && self.guests.is_empty()
                && matches!(self.layout, Layout::Dense { .. })
                && crate::backend::simd::narrow_f32(self.prob.kernel, &self.layout)
                && q >= IN_PLACE_BLOCK_MIN_Q
                && q * self.prob.len() * std::mem::size_of::<T>() >= IN_PLACE_BLOCK_MIN_BYTES)
    }

    /// How many columns this backend holds at once ([`crate::backend::Hints`]): every one
    /// when they are computed in place (they take no cache slots), else the cache's slots.
    pub(super) fn column_capacity(&self) -> usize {
        if self.computes_in_place() {
            self.prob.len()
        } else {
            self.cache.capacity()
        }
    }

    /// Rows r0..r0 + out.len() of the columns `cols` — (j, x_j as [`Self::load_query`] writes
    /// it; unused for bit rows) — as the cache would hold them (the 1/C diagonal added), one
    /// output each, for [`Self::computes_in_place`] backends. Dense rows compute the columns in
    /// one batched call, so their exponentials run side by side.
    fn entries_in_place(&self, cols: &[(usize, &[f64])], r0: usize, outs: &mut [&mut [T]]) {
        let prob = self.prob;
        match (&self.layout, &self.rbf_table) {
            (Layout::Binary { .. }, Some(table)) if T::SINGLE => {
                for (&(j, _), out) in cols.iter().zip(outs.iter_mut()) {
                    // SAFETY: T is f32 (SINGLE), the same size and layout.
                    let out32: &mut [f32] = unsafe {
                        std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len())
                    };
                    crate::backend::simd::binary_rbf_entries(
                        &self.layout,
                        table,
                        &prob.y,
                        j,
                        r0,
                        out32,
                    );
                }
            }
            _ => {
                let args = ColumnArgs {
                    layout: &self.layout,
                    kernel: prob.kernel,
                    norms: &prob.norms,
                    y: &prob.y,
                    rbf_table: self.rbf_table.as_ref(),
                };
                with_dots(|dots| columns_chunk(&args, cols, r0, dots, outs));
            }
        }
        for (&(j, _), out) in cols.iter().zip(outs.iter_mut()) {
            if (r0..r0 + out.len()).contains(&j) {
                let e = &mut out[j - r0];
                *e = T::from_f64(e.to_f64() + prob.inv_c(j));
            }
        }
    }

    /// The queries x_j of `cols` for [`Self::entries_in_place`], d values each, into
    /// `self.in_place_q` (dense rows only; bit rows need none).
    fn queries_in_place(&mut self, cols: &[(usize, f64)]) {
        let d = self.prob.data.n_features();
        self.in_place_q.clear();
        if !matches!(self.layout, Layout::Dense { .. }) {
            return;
        }
        self.in_place_q.resize(cols.len() * d, 0.0);
        for (q, &(j, _)) in self.in_place_q.chunks_exact_mut(d.max(1)).zip(cols) {
            self.prob.data.row(j).scatter_f64(q);
        }
    }

    /// [`Self::update_resident`] for [`Self::computes_in_place`] backends: each chunk of rows
    /// computes its entries of the columns two at a time into buffers of its own and applies
    /// them as the resident update does, so g gets the same numbers without a column being
    /// written to or read from memory.
    pub(super) fn update_in_place(&mut self, scale: f64, cols: &[(usize, f64)]) {
        let m = self.prob.len();
        let d = self.prob.data.n_features().max(1);
        self.queries_in_place(cols);
        let gptr = SendPtr(self.g.as_mut_ptr());
        let mut chunk_min = std::mem::take(&mut self.chunk_min);
        let this = &*self;
        crate::team::map_into(
            m.div_ceil(CHUNK),
            |c| {
                let r0 = c * CHUNK;
                let n = CHUNK.min(m - r0);
                // SAFETY: rows r0..r0+n of g belong to this chunk.
                let g = unsafe { std::slice::from_raw_parts_mut(gptr.at(r0), n) };
                // The columns eight at a time (their exponentials side by side), applied to g
                // two at a time in the order of `cols`, as the resident update applies them.
                let mut buf = [[T::default(); CHUNK]; IN_PLACE_BATCH];
                for (k8, eight) in cols.chunks(IN_PLACE_BATCH).enumerate() {
                    let mut js = [(0usize, &[][..]); IN_PLACE_BATCH];
                    for (u, (slot, &(j, _))) in js.iter_mut().zip(eight).enumerate() {
                        let at = (k8 * IN_PLACE_BATCH + u) * d;
                        *slot = (j, this.in_place_q.get(at..at + d).unwrap_or(&[]));
                    }
                    let mut outs: [&mut [T]; IN_PLACE_BATCH] = buf.each_mut().map(|b| &mut b[..n]);
                    this.entries_in_place(&js[..eight.len()], r0, &mut outs[..eight.len()]);
                    for (p, two) in eight.chunks(2).enumerate() {
                        let col = |u: usize| -> (&[T], f64) {
                            match two.get(u) {
                                Some(&(_, a)) => (&buf[2 * p + u][..n], a),
                                None => (&[], 0.0),
                            }
                        };
                        let k = k8 * IN_PLACE_BATCH / 2 + p;
                        apply_pair(g, k, [col(0), col(1)], two.len(), scale, None);
                    }
                }
                match update::argmin(g) {
                    (_, usize::MAX) => (f64::INFINITY, usize::MAX),
                    (v, k) => (v, r0 + k),
                }
            },
            &mut chunk_min,
        );
        self.chunk_min = chunk_min;
        self.stats.columns_computed += cols.len() as u64;
    }

    /// Q_WW (row-major, `out`) for [`Self::computes_in_place`] backends: W's rows laid out
    /// apart, and each column of W computed over them as [`Self::entries_in_place`] computes
    /// it over all rows (an entry's arithmetic does not depend on where its row lies).
    pub(super) fn block_in_place(&mut self, w: &[usize], out: &mut [f64]) {
        let n = w.len();
        let prob = self.prob;
        if let (Layout::Binary { .. }, Some(table)) = (&self.layout, &self.rbf_table) {
            for (k, &j) in w.iter().enumerate() {
                for (o, &i) in out[k * n..(k + 1) * n].iter_mut().zip(w) {
                    let e =
                        crate::backend::simd::binary_rbf_entry(&self.layout, table, &prob.y, i, j)
                            .expect("bit rows");
                    let mut e = T::from_f64(e as f64);
                    if i == j {
                        e = T::from_f64(e.to_f64() + prob.inv_c(j));
                    }
                    *o = e.to_f64();
                }
            }
            return;
        }
        let sub = Layout::of_rows(prob.data, w, false);
        let norms: Vec<f64> = w.iter().map(|&i| prob.norms[i]).collect();
        let y: Vec<f64> = w.iter().map(|&i| prob.y[i]).collect();
        let args = ColumnArgs {
            layout: &sub,
            kernel: prob.kernel,
            norms: &norms,
            y: &y,
            rbf_table: None,
        };
        let d = prob.data.n_features();
        let mut q = vec![0.0; d];
        let mut col = vec![T::default(); n];
        for (k, &j) in w.iter().enumerate() {
            q.iter_mut().for_each(|v| *v = 0.0);
            prob.data.row(j).scatter_f64(&mut q);
            for r0 in (0..n).step_by(CHUNK) {
                let len = CHUNK.min(n - r0);
                with_dots(|dots| {
                    columns_chunk(
                        &args,
                        &[(k, &q[..])],
                        r0,
                        dots,
                        &mut [&mut col[r0..r0 + len]],
                    )
                });
            }
            col[k] = T::from_f64(col[k].to_f64() + prob.inv_c(j));
            for (o, e) in out[k * n..(k + 1) * n].iter_mut().zip(&col) {
                *o = e.to_f64();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::ActiveSet;
    use crate::backend::cpu::{CpuConfig, Precision};
    use crate::backend::{Backend, Columns};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::problem::Problem;
    use crate::rng::SplitMix64;

    /// `fused` updated by `cols` at once and `cached` pair by pair (with scale 0.9) hold the
    /// same g, bit for bit.
    fn same_update<T: Elem>(
        fused: &mut CpuBackend<'_, T>,
        cached: &mut CpuBackend<'_, T>,
        cols: &[(usize, f64)],
    ) {
        fused.update_many(0.9, cols).unwrap();
        crate::backend::update_by_pairs(cached, 0.9, cols).unwrap();
        let m = fused.prob.len();
        let idx: Vec<usize> = (0..m).collect();
        let (mut gf, mut gc) = (vec![0.0; m], vec![0.0; m]);
        fused.gather(&idx, &mut gf).unwrap();
        cached.gather(&idx, &mut gc).unwrap();
        assert_eq!(gf, gc);
    }

    /// The working-set update and block computed in place give g and Q_WW bit for bit as
    /// the cached columns do, and entries within f32 rounding of the f64 kernel: a row count
    /// that is not a multiple of the vector blocks; bit rows under the RBF kernel with few
    /// ones (table by permutation) and many (by gather); dense rows of two features in f32
    /// and f64.
    fn check_in_place<T: Elem>(prob: &Problem<'_>, precision: Precision, tol: f64) {
        let m = prob.len();
        let cfg = CpuConfig {
            cache_bytes: 64 << 20,
            precision: Some(precision),
            ..CpuConfig::default()
        };
        let (mut fused, mut cached) = (
            CpuBackend::<T>::new(prob, cfg),
            CpuBackend::<T>::new(prob, cfg),
        );
        assert!(fused.computes_in_place());
        assert_eq!(fused.column_capacity(), m);
        let mut a = ActiveSet::new(m);
        a.set(5, 1.0);
        fused.set_alpha(&a).unwrap();
        cached.set_alpha(&a).unwrap();
        // Eleven columns: a batch of eight and a partial one, with an odd last pair.
        let cols: Vec<(usize, f64)> = [5usize, 17, m - 4, m - 1, 300, 2048, 2049, 9, 1000, 4000, 2]
            .iter()
            .map(|&j| (j, 0.1 + j as f64 * 1e-4))
            .collect();
        same_update(&mut fused, &mut cached, &cols);
        assert_eq!(fused.reduce(&a).unwrap().s, cached.reduce(&a).unwrap().s);
        let w = [3usize, 5, 17, m - 4, m - 1];
        let (mut qf, mut gw) = (vec![0.0; 25], vec![0.0; 5]);
        fused.block(&w, &mut qf, &mut gw).unwrap();
        for (k, &j) in w.iter().enumerate() {
            let mut col = vec![0.0; 5];
            cached.column_entries(j, &w, &mut col).unwrap();
            assert_eq!(&qf[k * 5..(k + 1) * 5], &col[..], "column {j}");
            for (e, &i) in col.iter().zip(&w) {
                let exact = prob.q(i, j);
                assert!(
                    (e - exact).abs() <= tol * exact.abs(),
                    "Q[{i}, {j}] {e} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn columns_computed_in_place_match_cached_columns() {
        // Few ones (distances below 32), some (below 64, every 37th row with three times as
        // many: pairs of blocks by permutation and by gather), many (gather only).
        for (d, ones, gamma) in [(123usize, 14usize, 0.07), (300, 20, 0.03), (300, 90, 0.01)] {
            let (m, mut r) = (5003usize, SplitMix64::new(d as u64 + ones as u64));
            let (mut ip, mut ix, mut y) = (vec![0usize], Vec::new(), Vec::new());
            for i in 0..m {
                let k = if ones == 20 && i % 37 == 0 {
                    3 * ones
                } else {
                    ones
                };
                let mut row: Vec<u32> = (0..k).map(|_| (r.next_f64() * d as f64) as u32).collect();
                row.sort_unstable();
                row.dedup();
                ix.extend(row);
                ip.push(ix.len());
                y.push(if r.next_f64() < 0.4 { 1.0 } else { -1.0 });
            }
            let vs = vec![1.0f32; ix.len()];
            let ds = Dataset::from_csr(d, ip, ix, vs, y.clone());
            let prob = Problem::new(&ds, y, Kernel::Rbf { gamma }, 3.0).unwrap();
            check_in_place::<f32>(&prob, Precision::F32, 1e-7);
        }
        let (ds, y) = crate::backend::cpu::tests::random_problem(5003, 2, false, 9);
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 1.5 }, 3.0).unwrap();
        check_in_place::<f32>(&prob, Precision::F32, 1e-6);
        check_in_place::<f64>(&prob, Precision::F64, 1e-13);
    }

    /// Narrow dense rows compute a large block and the update after it in place, Q_WW and g
    /// bit for bit as the cached columns give them; a small block, f64 entries, too few rows
    /// or too many features keep the cache.
    #[test]
    fn narrow_rows_compute_large_blocks_in_place() {
        let (ds, y) = crate::backend::cpu::tests::random_problem(9001, 8, false, 10);
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.7 }, 3.0).unwrap();
        let m = prob.len();
        let cfg = CpuConfig {
            cache_bytes: 64 << 20,
            precision: Some(Precision::F32),
            ..CpuConfig::default()
        };
        let (mut fused, mut cached) = (
            CpuBackend::<f32>::new(&prob, cfg),
            CpuBackend::<f32>::new(&prob, cfg),
        );
        assert!(!fused.computes_in_place());
        assert!(fused.blocks_in_place(64) && !fused.blocks_in_place(32));
        let mut a = ActiveSet::new(m);
        a.set(5, 1.0);
        fused.set_alpha(&a).unwrap();
        cached.set_alpha(&a).unwrap();
        let w: Vec<usize> = (0..64).map(|k| (k * 137 + 5) % m).collect();
        let (mut qf, mut gw) = (vec![0.0; 64 * 64], vec![0.0; 64]);
        assert_eq!(
            fused.block(&w, &mut qf, &mut gw).unwrap(),
            0,
            "no cache hits in place"
        );
        assert!(fused.in_place_now);
        for (k, &j) in w.iter().enumerate() {
            let mut col = vec![0.0; 64];
            cached.column_entries(j, &w, &mut col).unwrap();
            assert_eq!(&qf[k * 64..(k + 1) * 64], &col[..], "column {j}");
        }
        let cols: Vec<(usize, f64)> = w[..11]
            .iter()
            .map(|&j| (j, 0.1 + j as f64 * 1e-4))
            .collect();
        same_update(&mut fused, &mut cached, &cols);
        // A small block keeps the cache.
        fused
            .block(&w[..32], &mut qf[..32 * 32], &mut gw[..32])
            .unwrap();
        assert!(!fused.in_place_now);

        let in_place = |m: usize, d: usize, precision: Precision, q: usize| {
            let (ds, y) = crate::backend::cpu::tests::random_problem(m, d, false, 11);
            let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.5 }, 1.0).unwrap();
            let cfg = CpuConfig {
                precision: Some(precision),
                ..CpuConfig::default()
            };
            match precision {
                Precision::F32 => CpuBackend::<f32>::new(&prob, cfg).blocks_in_place(q),
                Precision::F64 => CpuBackend::<f64>::new(&prob, cfg).blocks_in_place(q),
            }
        };
        assert!(in_place(8192, 31, Precision::F32, 64));
        assert!(in_place(4096, 8, Precision::F32, 128));
        assert!(!in_place(8191, 8, Precision::F32, 64));
        assert!(!in_place(8192, 32, Precision::F32, 64));
        assert!(!in_place(8192, 8, Precision::F64, 64));
        assert!(in_place(100, 4, Precision::F64, 2));
    }
}
