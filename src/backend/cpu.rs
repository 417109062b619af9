//! The CPU backend: both cores through rayon, f64 gradient(s), kernel columns computed from an
//! AoSoA (dense) or CSR layout with vectorized f64 arithmetic, an LRU column cache bounded by
//! `--cache-mb`, and the column computation, gradient update and argmin fused in one pass.
//! Nothing is allocated per iteration once the cache is warm.

use super::cache::ColumnCache;
use super::groups::Groups;
use super::simd::{BATCH, ColumnArgs, Elem, Layout, columns_chunk_packed, pack_queries};
use super::update::{self, ChunkUpdate};
use super::{Backend, BackendStats, Local, MarkedReduction, Marks, Reduction, Update};
use crate::active::ActiveSet;
use crate::error::Result;
use crate::problem::Problem;
use rayon::prelude::*;

mod apply;
mod away;
mod backend;
mod deferred;
mod in_place;
mod pass;
mod touched;

/// The most bytes of query rows a blocked prefetch holds at once.
const MAX_QUERY_BYTES: usize = 64 << 20;

/// Rows per parallel task (a multiple of LANES).
const CHUNK: usize = 2048;

thread_local! {
    /// Per-thread scratch of the column passes (dots of one chunk): zeroing a fresh
    /// CHUNK-sized array in every task is a measurable cost on short iterations.
    static DOTS: std::cell::RefCell<Vec<f64>> = std::cell::RefCell::new(vec![0.0; BATCH * CHUNK]);
}

/// Runs `f` with this thread's dots scratch.
fn with_dots<R>(f: impl FnOnce(&mut [f64]) -> R) -> R {
    DOTS.with_borrow_mut(|d| f(d))
}

/// A gradient update as one fused pass applies it: up to two (column, coefficient) terms,
/// the factor on g, the factor on g⁻, and whether g⁻ takes the old g ([`super::Update`]).
type FusedUpdate = ([Option<(usize, f64)>; 2], f64, f64, bool);

/// Storage precision of cached kernel columns (the gradient is always f64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Precision {
    /// f32 columns: half the memory traffic and twice the columns in the cache.
    #[default]
    F32,
    /// f64 columns: Q exactly as the host evaluates it (for tight gaps).
    F64,
}

/// CPU backend settings.
#[derive(Debug, Clone, Copy)]
pub struct CpuConfig {
    /// Column cache budget in bytes.
    pub cache_bytes: usize,
    /// Column precision; None: the solver's default ([`Algorithm::default_precision`],
    /// resolved by [`TrainParams::resolved`]; read it with [`precision`](Self::precision)).
    ///
    /// [`Algorithm::default_precision`]: crate::solver::Algorithm::default_precision
    /// [`TrainParams::resolved`]: crate::train::TrainParams::resolved
    pub precision: Option<Precision>,
    /// The solver computes its columns in batched blocks (the working-set solver; set by
    /// [`TrainParams::resolved`](crate::train::TrainParams::resolved)): sparse rows are then
    /// laid out dense down to a lower share of non-zeros, where a batch's register tiles share
    /// each dense row among its queries (see `Layout::new_as`).
    pub batched: bool,
}

impl Default for CpuConfig {
    fn default() -> Self {
        CpuConfig {
            cache_bytes: 1024 << 20,
            precision: None,
            batched: false,
        }
    }
}

impl CpuConfig {
    /// The column precision: the one named, else f32 (every solver's default but
    /// SimpleSVM's, which [`TrainParams::resolved`](crate::train::TrainParams::resolved)
    /// names).
    pub fn precision(&self) -> Precision {
        self.precision.unwrap_or(Precision::F32)
    }
}

/// Builds a CPU backend for the problem.
pub fn cpu_backend<'a>(prob: &'a Problem<'a>, cfg: CpuConfig) -> Box<dyn Local + 'a> {
    match cfg.precision() {
        Precision::F32 => Box::new(CpuBackend::<f32>::new(prob, cfg)),
        Precision::F64 => Box::new(CpuBackend::<f64>::new(prob, cfg)),
    }
}

/// Support points per task of the reduction's gather ([`CpuBackend::reduce_gathered`]).
const REDUCE_CHUNK: usize = 16_384;
/// The support size from which the reduction gathers its entries of g on the team's threads.
pub(super) const REDUCE_GATHERED: usize = 65_536;
/// Running sums of a chunk of [`CpuBackend::reduce_gathered`].
const REDUCE_LANES: usize = 8;

/// One chunk's part of [`CpuBackend::reduce_gathered`]: its largest g (lowest index among
/// ties) and its sums αᵀg and αᵀg⁻.
struct ReducePart {
    v: usize,
    g_v: f64,
    ag: f64,
    agp: f64,
}

#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: used only for disjoint chunk writes inside one parallel pass.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as for Send: the tasks sharing it write disjoint chunks.
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// Pointer to element `i` (method call so closures capture the whole Send wrapper).
    #[inline(always)]
    fn at(&self, i: usize) -> *mut T {
        // SAFETY: callers pass an i within the allocation the pointer came from.
        unsafe { self.0.add(i) }
    }
}

/// The CPU implementation of [`Backend`].
pub struct CpuBackend<'a, T: Elem> {
    prob: &'a Problem<'a>,
    layout: Layout<'a>,
    g: Vec<f64>,
    gp: Vec<f64>,
    prev: bool,
    cache: ColumnCache<T>,
    /// Query rows (x_j as f64) of the columns a pass computes, one per column of a batch.
    qbuf: Vec<Vec<f64>>,
    /// The features a sparse query left in each `qbuf` slot (None: a dense one, non-zeros
    /// anywhere): the next sparse query clears only those — on wide sparse data (1.3M
    /// features) clearing the whole slot per column would be the training's main cost.
    qset: Vec<Option<Vec<u32>>>,
    /// The (slot, column, query buffer) list of a blocked prefetch (kept between calls).
    compute_buf: Vec<(usize, usize, usize)>,
    /// A blocked prefetch's full batches of dense queries, packed in f32 (kept between calls).
    packed: Vec<Vec<f32>>,
    /// Marks of the columns a blocked prefetch has listed (all false between calls).
    listed: Vec<bool>,
    chunk_min: Vec<(f64, usize)>,
    min_valid: bool,
    stats: BackendStats,
    /// CPU time of a column entry (ns, all threads' time over the entries), an exponential
    /// average over the column passes; 0 before the first.
    entry_ns: f64,
    /// Column just computed by `column_entries`: the update that follows is not a cache hit.
    fresh: usize,
    /// Marks of the marked reduction (allocated on first use).
    marks: Vec<u8>,
    /// Rows that repeat earlier rows' features: columns are computed (and cached) once per
    /// distinct row, and the gradient is kept per group of equal rows (then `g` and `gp` are
    /// empty). None: every row its own column entry and gradient entry.
    distinct: Option<Distinct>,
    /// The RBF entries by squared distance for bit rows (other layouts and kernels: None).
    rbf_table: Option<super::simd::RbfTable>,
    /// The queries of an update computed in place ([`Self::queries_in_place`]).
    in_place_q: Vec<f64>,
    /// W's norms, labels and entries of a deferred block ([`Self::block_deferred`]).
    at_w: deferred::AtW<T>,
    /// The original columns of the update in flight (for the deduplicated pass).
    up_j: [usize; 2],
    /// Points whose columns this backend computes without holding their rows (a distributed
    /// run's vertices owned by other ranks): column index m + k is guest k.
    guests: Vec<Guest>,
    /// ‖x‖² and y of the rows, then of the guests (empty until the first guest).
    norms_ext: Vec<f64>,
    y_ext: Vec<f64>,
    /// Cache slots of a batched update or block, and the columns' data and factors (kept
    /// between calls).
    slot_buf: Vec<usize>,
    col_buf: Vec<usize>,
    /// Whether the last block computed its entries in place ([`Self::blocks_in_place`]): the
    /// update that follows it does too.
    in_place_now: bool,
    /// (k, the 2k-th lowest g) of the last [`Columns::lowest`](crate::backend::Columns::lowest) (see there).
    lowest_bound: (usize, f64),
    /// The parallel selections' per-chunk lists.
    select_lists: crate::backend::ChunkLists,
    /// Q_ii of every point, once the working-set solver asks for away candidates (and its
    /// value when every point has the same), and the candidates' scores by chunk (rows read
    /// through groups or deduplicated).
    diag: Vec<f64>,
    diag_all: Option<f64>,
    away_scores: Vec<std::sync::Mutex<Vec<f64>>>,
    /// The reduction's parts over the support, one per chunk (`reduce_gathered`).
    reduce_parts: Vec<ReducePart>,
    ptr_buf: Vec<(SendPtr<T>, f64)>,
    /// The touched rows' bits, for their entries computed in place (see `touched.rs`).
    touched_bits: touched::TouchedBits,
}

/// A point held for its columns only ([`Guests::add_guest`](crate::backend::Guests::add_guest)).
struct Guest {
    row: crate::data::OwnedRow,
    norm: f64,
    y: f64,
    inv_c: f64,
}

/// Read access to g and g⁻ whichever way they are kept.
#[derive(Clone, Copy)]
struct Grad<'b> {
    g: &'b [f64],
    gp: &'b [f64],
    groups: Option<&'b Groups>,
}

impl Grad<'_> {
    #[inline]
    fn g(&self, i: usize) -> f64 {
        match self.groups {
            Some(gr) => gr.g(i),
            None => self.g[i],
        }
    }

    #[inline]
    fn gp(&self, i: usize) -> f64 {
        match self.groups {
            Some(gr) => gr.gp(i),
            None if self.gp.is_empty() => self.g[i],
            None => self.gp[i],
        }
    }
}

/// The entries Q[i, j] of one cached column j: the column's entry, or for distinct rows the
/// entry of i's distinct row with the labels and, at i = j, 1/C added.
struct Entries<'b, T> {
    col: &'b [T],
    rep: Option<&'b [u32]>,
    y: &'b [f64],
    j: usize,
    yj: f64,
    inv_c: f64,
}

impl<T: Elem> Entries<'_, T> {
    #[inline(always)]
    fn get(&self, i: usize) -> f64 {
        match self.rep {
            None => self.col[i].to_f64(),
            Some(rep) => {
                let mut q = self.y[i] * self.yj * self.col[rep[i] as usize].to_f64();
                if i == self.j {
                    q += self.inv_c;
                }
                q
            }
        }
    }
}

/// The distinct rows of a dataset with many repeated rows (KDD99: 116,768 of 395,216; see
/// [`Problem::distinct_rows`]).
/// Q[i, j] = y_i y_j (k(x_i, x_j) + 1) + δ_ij/C depends on x_i only through k, so a column
/// is k + 1 over the distinct rows, and each row reads its entry through `rep` — the
/// same numbers as the full column (exact in f64; one rounding of k + 1 in f32, where the full
/// column rounded y_i y_j (k + 1) + δ_ij/C).
struct Distinct {
    /// For each row, its distinct row.
    rep: Vec<u32>,
    /// Number of distinct rows.
    n: usize,
    /// ‖x‖² per distinct row, then per guest (whose columns are keyed n + k).
    norms: Vec<f64>,
    /// All ones, n + guests of them: distinct columns carry no labels.
    ones: Vec<f64>,
    /// The gradient per group of equal rows.
    groups: Groups,
}

/// The column key of point j among `m` rows deduplicated by `dd`: its distinct row, or for
/// guest k = j − m the slot after the distinct rows.
fn distinct_key(dd: &Distinct, m: usize, j: usize) -> usize {
    if j < m {
        dd.rep[j] as usize
    } else {
        dd.n + (j - m)
    }
}

impl<'a, T: Elem> CpuBackend<'a, T> {
    /// Lays the data out and allocates g.
    pub fn new(prob: &'a Problem<'a>, cfg: CpuConfig) -> Self {
        let start = std::time::Instant::now();
        let mut be = Self::laid_out(prob, cfg);
        be.stats.call_ns[super::stats::call::SETUP] = start.elapsed().as_nanos() as u64;
        be
    }

    /// [`new`](Self::new) without its clock.
    fn laid_out(prob: &'a Problem<'a>, cfg: CpuConfig) -> Self {
        let m = prob.len();
        let d = prob.data.n_features();
        let (layout, distinct, col_len) = match prob.distinct_rows() {
            Some(crate::problem::DistinctRows { rows, rep }) => {
                let n = rows.len();
                let norms: Vec<f64> = rows.iter().map(|&i| prob.norms[i]).collect();
                let groups = Groups::new(rep, &prob.y, norms.len());
                (
                    Layout::of_rows_as(prob.data, rows, prob.layout_stats(), cfg.batched),
                    Some(Distinct {
                        rep: rep.clone(),
                        n,
                        norms,
                        ones: vec![1.0; n],
                        groups,
                    }),
                    n,
                )
            }
            None => (
                Layout::new_as(prob.data, prob.layout_stats(), cfg.batched),
                None,
                m,
            ),
        };
        let rbf_table = match prob.kernel {
            crate::kernel::Kernel::Rbf { gamma } => super::simd::RbfTable::new(gamma, &layout),
            _ => None,
        };
        // With groups, g lives in them (per group and per touched row).
        let g_len = if distinct.is_some() { 0 } else { m };
        CpuBackend {
            prob,
            layout,
            rbf_table,
            in_place_q: Vec::new(),
            at_w: Default::default(),
            distinct,
            up_j: [usize::MAX; 2],
            g: vec![0.0; g_len],
            gp: Vec::new(),
            prev: false,
            cache: ColumnCache::new(col_len, cfg.cache_bytes),
            qbuf: vec![vec![0.0; d]; BATCH],
            qset: vec![Some(Vec::new()); BATCH],
            compute_buf: Vec::new(),
            packed: Vec::new(),
            listed: Vec::new(),
            chunk_min: Vec::with_capacity(m.div_ceil(CHUNK)),
            min_valid: false,
            stats: BackendStats::default(),
            entry_ns: 0.0,
            fresh: usize::MAX,
            marks: Vec::new(),
            guests: Vec::new(),
            norms_ext: Vec::new(),
            y_ext: Vec::new(),
            slot_buf: Vec::new(),
            col_buf: Vec::new(),
            in_place_now: false,
            lowest_bound: (0, f64::NEG_INFINITY),
            select_lists: Default::default(),
            diag: Vec::new(),
            diag_all: None,
            away_scores: Vec::new(),
            reduce_parts: Vec::new(),
            ptr_buf: Vec::new(),
            touched_bits: touched::TouchedBits::default(),
        }
    }

    /// Point i's row, ‖x_i‖², y_i and 1/C_i: a row of the problem, or guest i − m.
    fn point(&self, i: usize) -> (crate::data::Row<'_>, f64, f64, f64) {
        let m = self.prob.len();
        if i < m {
            (
                self.prob.data.row(i),
                self.prob.norms[i],
                self.prob.y[i],
                self.prob.inv_c(i),
            )
        } else {
            let g = &self.guests[i - m];
            (g.row.as_row(), g.norm, g.y, g.inv_c)
        }
    }

    /// Number of columns the cache can hold.
    pub fn cache_columns(&self) -> usize {
        self.cache.capacity()
    }

    /// The cache key of column j: its distinct row when rows are deduplicated (guest k's:
    /// distinct rows + k).
    fn key(&self, j: usize) -> usize {
        match &self.distinct {
            Some(dd) => distinct_key(dd, self.prob.len(), j),
            None => j,
        }
    }

    /// Number of distinct rows the columns are computed over (m when not deduplicated).
    pub fn column_rows(&self) -> usize {
        match &self.distinct {
            Some(dd) => dd.n,
            None => self.prob.len(),
        }
    }

    /// Computes the columns `js` that are not cached in batched passes over the data (each
    /// block of rows read once for up to `BATCH` columns) and leaves them in the cache;
    /// at most half the slots the cache may use now are filled, so none of them evicts
    /// another. Returns how many were computed.
    pub fn prefetch(&mut self, js: &[usize]) -> usize {
        let room = (self.cache.usable() / 2).max(1);
        // Blocked where rows are read as blocks (not CSR, whose columns gather per query) and
        // the queries, one f64 row each, stay small.
        let n = js.len().min(room);
        let query_bytes = n * 8 * self.qbuf[0].len();
        if self.distinct.is_none()
            && !matches!(self.layout, Layout::Sparse { .. })
            && query_bytes <= MAX_QUERY_BYTES
        {
            return self.prefetch_blocked(&js[..n]);
        }
        let mut done = 0;
        let mut batch: Vec<(usize, usize, usize)> = Vec::with_capacity(BATCH);
        for &j in js.iter().take(room) {
            let key = self.key(j);
            if batch.iter().any(|&(_, b, _)| self.key(b) == key) {
                continue;
            }
            let (slot, hit) = self.cache.get_or_assign(key, None);
            if hit {
                continue;
            }
            self.load_query(batch.len(), j);
            batch.push((slot, j, batch.len()));
            if batch.len() == BATCH {
                done += self.compute_only(&batch);
                batch.clear();
            }
        }
        if !batch.is_empty() {
            done += self.compute_only(&batch);
        }
        self.stats.prefetched += done as u64;
        done
    }

    /// [`prefetch`](Self::prefetch) of the columns `js` (within the room) as one pass over
    /// the rows: each task takes its rows a cache-sized block at a time through every
    /// column's batch, so a block of rows is read from memory once for all the columns
    /// (X_W·Xᵀ blocked as a matrix product is) instead of once per batch of [`BATCH`].
    fn prefetch_blocked(&mut self, js: &[usize]) -> usize {
        let mut compute = std::mem::take(&mut self.compute_buf);
        compute.clear();
        let mut listed = std::mem::take(&mut self.listed);
        listed.resize(
            self.cache
                .len()
                .max(js.iter().map(|&j| j + 1).max().unwrap_or(0)),
            false,
        );
        for &j in js {
            if listed[j] {
                continue;
            }
            let (slot, hit) = self.cache.get_or_assign(j, None);
            if hit {
                continue;
            }
            let k = compute.len();
            self.grow_queries(k + 1);
            self.load_query(k, j);
            compute.push((slot, j, k));
            listed[j] = true;
        }
        for &(_, j, _) in &compute {
            listed[j] = false;
        }
        self.listed = listed;
        let done = compute.len();
        if done > 0 {
            let keep_min = self.min_valid;
            let saved = std::mem::take(&mut self.chunk_min);
            self.pass_blocked(&compute);
            self.chunk_min = saved;
            self.min_valid = keep_min;
        }
        self.compute_buf = compute;
        self.stats.prefetched += done as u64;
        done
    }

    /// A pass that only computes columns, keeping the minima of the last update valid.
    fn compute_only(&mut self, compute: &[(usize, usize, usize)]) -> usize {
        let keep_min = self.min_valid;
        let saved = std::mem::take(&mut self.chunk_min);
        self.pass(compute, None);
        self.chunk_min = saved;
        self.min_valid = keep_min;
        compute.len()
    }

    fn load_query(&mut self, k: usize, j: usize) {
        let m = self.prob.len();
        let q = &mut self.qbuf[k];
        let row = if j < m {
            self.prob.data.row(j)
        } else {
            self.guests[j - m].row.as_row()
        };
        match row {
            crate::data::Row::Sparse(ix, _) => {
                match &self.qset[k] {
                    // (A guest's features past this rank's range were not written.)
                    Some(prev) => prev.iter().for_each(|&f| {
                        if let Some(o) = q.get_mut(f as usize) {
                            *o = 0.0;
                        }
                    }),
                    None => q.iter_mut().for_each(|o| *o = 0.0),
                }
                row.scatter_f64(q);
                let set = self.qset[k].get_or_insert_with(Vec::new);
                set.clear();
                set.extend_from_slice(ix);
            }
            crate::data::Row::Dense(_) => {
                row.scatter_f64(q);
                self.qset[k] = None;
            }
        }
    }

    /// out\[k\] = Q\[idx\[k\], j\] from the cached column of j in `slot`.
    fn read_entries(&self, slot: usize, j: usize, idx: &[usize], out: &mut [f64]) {
        let entries = self.entry_of(slot, j);
        for (o, &i) in out.iter_mut().zip(idx) {
            *o = entries.get(i);
        }
    }

    /// Q[i, j] for any point i, read from column j's cache slot ([`Entries`]).
    fn entry_of(&self, slot: usize, j: usize) -> Entries<'_, T> {
        let (_, _, yj, inv_c) = self.point(j);
        Entries {
            col: self.cache.data(slot),
            rep: self.distinct.as_ref().map(|dd| &dd.rep[..]),
            y: &self.prob.y,
            j,
            yj,
            inv_c,
        }
    }

    /// The cache slots of the columns `js` (each made resident: computed in batched passes
    /// where missing), or None when the cache cannot hold them all at once. `slots` is the
    /// caller's buffer.
    fn resident(&mut self, js: &[usize], slots: &mut Vec<usize>) -> Option<()> {
        let need = 2 * js.len() + 2;
        if need > self.cache.capacity() {
            return None;
        }
        self.cache.ensure_usable(need);
        self.prefetch(js);
        slots.clear();
        for &j in js {
            let key = self.key(j);
            let (slot, hit) = self.cache.get_or_assign(key, None);
            if !hit {
                self.load_query(0, j);
                self.compute_only(&[(slot, j, 0)]);
            }
            slots.push(slot);
        }
        Some(())
    }

    /// Makes s's column resident for the away scores: where the cache lacks it, computed in
    /// one pass with the columns of the first points of `next` that it lacks too (the columns
    /// the caller computes next, [`AwayScratch::next`](crate::backend::AwayScratch::next)), a
    /// batch in all. s's column alone reads every row for one column (covtype's 464,810 rows:
    /// about 1.5 ms, bound by memory); the joint pass costs about as much and takes those
    /// columns off the update's pass (covtype's main loop 108–112 → 102–104 s in two pairs of
    /// runs, the same model). The columns are the same numbers either way.
    fn s_column_with(&mut self, s: usize, next: &[usize]) {
        if self.cache.holds(self.key(s)) {
            return;
        }
        let mut js = std::mem::take(&mut self.col_buf);
        js.clear();
        js.push(s);
        let lacking = next
            .iter()
            .copied()
            .filter(|&j| j < self.len() && j != s && !self.cache.holds(self.key(j)));
        js.extend(lacking.take(BATCH - 1));
        self.prefetch(&js);
        self.col_buf = js;
    }

    /// The slot of point j's column, computed now if the cache lacks it (and then marked as
    /// the fresh column a following update reuses).
    fn column_slot(&mut self, j: usize) -> usize {
        let key = self.key(j);
        let (slot, miss) = self.resolve(key, None);
        if miss {
            self.load_query(0, j);
            self.compute_only(&[(slot, j, 0)]);
            self.fresh = key;
        }
        slot
    }

    /// Makes column j resident; returns its slot and whether it must be computed.
    fn resolve(&mut self, j: usize, pinned: Option<usize>) -> (usize, bool) {
        let (slot, hit) = self.cache.get_or_assign(j, pinned);
        let fresh = std::mem::replace(&mut self.fresh, usize::MAX);
        if hit && j != fresh {
            self.stats.cache_hits += 1;
        }
        (slot, !hit)
    }

    fn grad(&self) -> Grad<'_> {
        Grad {
            g: &self.g,
            gp: if self.prev { &self.gp } else { &[] },
            groups: self.distinct.as_ref().map(|dd| &dd.groups),
        }
    }

    /// The reduction over the support of a plain gradient (no distinct rows): (v, g_v), the
    /// largest g_i over the support with the lowest index among ties, and (αᵀg, αᵀg⁻). The
    /// support is taken by chunks of [`REDUCE_CHUNK`] points on the team's threads, each
    /// chunk's largest and its sums found on the way: a chunk's sum in [`REDUCE_LANES`]
    /// running sums, its k-th point in sum k mod [`REDUCE_LANES`], the running sums added in
    /// order, and the chunks' sums added in α's order — a fixed order whatever the threads,
    /// where one chain in α's order waited on each addition (covtype's 371,007 support
    /// vectors: the reductions took 3.95 s of its run instead of 7.75).
    pub(super) fn reduce_gathered(&mut self, alpha: &ActiveSet) -> ((usize, f64), (f64, f64)) {
        let (idx, w) = (alpha.indices(), alpha.weights());
        let (n, prev) = (idx.len(), self.prev);
        let mut parts = std::mem::take(&mut self.reduce_parts);
        {
            let (g, gp) = (&self.g, &self.gp);
            crate::team::map_into(
                n.div_ceil(REDUCE_CHUNK),
                |c| {
                    let (k0, k1) = (c * REDUCE_CHUNK, n.min((c + 1) * REDUCE_CHUNK));
                    let (mut v, mut g_v) = (usize::MAX, f64::NEG_INFINITY);
                    let (mut ag, mut agp) = ([0.0f64; REDUCE_LANES], [0.0f64; REDUCE_LANES]);
                    for (k, (&i, &a)) in idx[k0..k1].iter().zip(&w[k0..k1]).enumerate() {
                        let gi = g[i];
                        ag[k % REDUCE_LANES] += a * gi;
                        if prev {
                            agp[k % REDUCE_LANES] += a * gp[i];
                        }
                        if gi > g_v || (gi == g_v && i < v) {
                            g_v = gi;
                            v = i;
                        }
                    }
                    let sum = |l: [f64; REDUCE_LANES]| l.iter().fold(0.0, |s, &x| s + x);
                    ReducePart {
                        v,
                        g_v,
                        ag: sum(ag),
                        agp: sum(agp),
                    }
                },
                &mut parts,
            );
        }
        let (mut v, mut g_v) = (usize::MAX, f64::NEG_INFINITY);
        let (mut ag, mut agp) = (0.0, 0.0);
        for p in &parts {
            if p.g_v > g_v || (p.g_v == g_v && p.v < v) {
                g_v = p.g_v;
                v = p.v;
            }
            ag += p.ag;
            agp += p.agp;
        }
        self.reduce_parts = parts;
        ((v, g_v), (ag, agp))
    }

    fn argmin_all(&mut self) -> (usize, f64) {
        if !self.min_valid
            && let Some(Distinct { groups: gr, .. }) = &self.distinct
        {
            self.chunk_min.clear();
            for (c, h) in gr.h.chunks(CHUNK).enumerate() {
                let k0 = c * CHUNK;
                let min = update::min_open(h, &gr.closed[k0..k0 + h.len()]);
                self.chunk_min.push(gr.chunk_row(k0, h, min));
            }
            self.chunk_min.push(gr.touched_min());
            self.min_valid = true;
        }
        if !self.min_valid {
            let g = &self.g;
            self.chunk_min.clear();
            crate::team::map_into(
                g.len().div_ceil(CHUNK),
                |c| {
                    let ch = &g[c * CHUNK..g.len().min((c + 1) * CHUNK)];
                    let mut best = (f64::INFINITY, usize::MAX);
                    for (i, &v) in ch.iter().enumerate() {
                        if v < best.0 {
                            best = (v, c * CHUNK + i);
                        }
                    }
                    best
                },
                &mut self.chunk_min,
            );
            self.min_valid = true;
        }
        let mut best = (f64::INFINITY, usize::MAX);
        for &(v, i) in &self.chunk_min {
            if v < best.0 || (v == best.0 && i < best.1) {
                best = (v, i);
            }
        }
        if best.1 == usize::MAX {
            // All entries NaN or +inf: report index 0 so the caller sees the bad value.
            let g0 = if self.prob.is_empty() {
                f64::NAN
            } else {
                self.grad().g(0)
            };
            return (0, g0);
        }
        (best.1, best.0)
    }
}

/// Applies the columns `ptrs` (rows r0..r0 + len of each, with their factors) to `h` two at a
/// time with the arithmetic of one [`Backend::update`] per pair, the first pair scaling by
/// `scale`; `rep` as in [`ChunkUpdate`] for deduplicated columns (then `h` holds the groups of
/// distinct rows r0..r0 + len). f32 columns of plain rows on AVX-512 take every column in one
/// pass over h with the same arithmetic ([`apply::all_columns`]).
fn apply_by_pairs<T: Elem>(
    h: &mut [f64],
    ptrs: &[(SendPtr<T>, f64)],
    r0: usize,
    len: usize,
    scale: f64,
    rep: Option<&[u32]>,
) {
    if rep.is_none() && apply::all_columns(&mut h[..len], ptrs, r0, scale) {
        return;
    }
    apply_pairs_each(h, ptrs, r0, len, scale, rep);
}

/// [`apply_by_pairs`] one pass over h per pair of columns.
fn apply_pairs_each<T: Elem>(
    h: &mut [f64],
    ptrs: &[(SendPtr<T>, f64)],
    r0: usize,
    len: usize,
    scale: f64,
    rep: Option<&[u32]>,
) {
    for (k, two) in ptrs.chunks(2).enumerate() {
        let col = |u: usize| -> (&[T], f64) {
            match two.get(u) {
                // SAFETY: rows r0..r0 + len of a resident column, only read.
                Some(&(p, c)) => (unsafe { std::slice::from_raw_parts(p.at(r0), len) }, c),
                None => (&[], 0.0),
            }
        };
        apply_pair(
            h,
            k,
            [col(0), col(1)],
            two.len(),
            scale,
            rep.map(|r| (r, len, r0)),
        );
    }
}

/// Pair `k` of an update applied pair by pair to one chunk: h ← s·h + a₀·col₀ + a₁·col₁ (`nu`
/// columns), s = `scale` for the first pair and 1 after; `rep` = (each group's signed
/// distinct row, the number of distinct rows the columns hold, the first of them) for
/// deduplicated columns.
fn apply_pair<T: Elem>(
    h: &mut [f64],
    k: usize,
    cols: [(&[T], f64); 2],
    nu: usize,
    scale: f64,
    rep: Option<(&[u32], usize, usize)>,
) {
    let upd = ChunkUpdate {
        scale: if k == 0 { scale } else { 1.0 },
        pc: 0.0,
        rotate: false,
        cols,
        nu,
        rep: rep.map(|r| r.0),
        distinct: rep.map_or(0, |r| r.1),
        base: rep.map_or(0, |r| r.2 as u32),
    };
    update::apply(h, &mut [], &upd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::rng::SplitMix64;

    pub(super) fn random_problem(
        m: usize,
        d: usize,
        sparse: bool,
        seed: u64,
    ) -> (Dataset, Vec<f64>) {
        let mut r = SplitMix64::new(seed);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        let mut y = Vec::new();
        for _ in 0..m {
            for f in 0..d {
                if !sparse || r.next_f64() < 0.1 {
                    ix.push(f as u32);
                    vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                }
            }
            ip.push(ix.len());
            y.push(if r.next_f64() < 0.5 { 1.0 } else { -1.0 });
        }
        (Dataset::from_csr(d, ip, ix, vs, y.clone()), y)
    }

    /// Guests (rows held elsewhere: a distributed run's vertices of other ranks) in a backend
    /// over deduplicated rows: their columns over the distinct rows, no diagonal entry among
    /// the rows, their own labels — the same g, g⁻, Q entries and minima as the backend that
    /// does not group the rows, f64 and f32, with a guest equal to one of the rows and one new.
    #[test]
    fn guests_over_deduplicated_rows_give_the_ungrouped_columns() {
        for sparse in [false, true] {
            let (pat, _) = random_problem(40, 9, sparse, 21);
            let (fresh, _) = random_problem(1, 9, sparse, 22);
            let mut r = SplitMix64::new(6);
            let rows: Vec<usize> = (0..5000).map(|_| r.below(40)).collect();
            let mut ds = pat.subset(&rows);
            ds.labels = (0..5000)
                .map(|_| if r.next_f64() < 0.5 { 1.0 } else { -1.0 })
                .collect();
            let kernel = Kernel::Rbf { gamma: 0.4 };
            let grouped = Problem::new(&ds, ds.labels.clone(), kernel, 3.0).unwrap();
            assert!(grouped.distinct_rows().is_some());
            let plain = Problem::new(&ds, ds.labels.clone(), kernel, 3.0)
                .unwrap()
                .without_distinct_rows();
            for precision in [Precision::F64, Precision::F32] {
                let cfg = CpuConfig {
                    cache_bytes: 1 << 20,
                    precision: Some(precision),
                    ..CpuConfig::default()
                };
                let tol = if precision == Precision::F64 {
                    1e-12
                } else {
                    1e-5
                };
                let (mut a, mut b) = (cpu_backend(&grouped, cfg), cpu_backend(&plain, cfg));
                let m = ds.len();
                let mut gs = Vec::new();
                for be in [&mut a, &mut b] {
                    be.enable_prev();
                    // Guest m: a copy of pattern 7 labelled −1; guest m + 1: a new row, +1.
                    let g0 = be.add_guest(pat.row(7), -1.0, 0.5).unwrap();
                    let g1 = be.add_guest(fresh.row(0), 1.0, 0.5).unwrap();
                    assert_eq!((g0, g1), (m, m + 1));
                    let mut al = ActiveSet::new(m);
                    al.set(3, 0.6);
                    al.set(4000, 0.4);
                    be.set_alpha(&al).unwrap();
                    for (s, cols, p) in [
                        (0.7, [Some((m, 0.2)), Some((m + 1, 0.1))], 0.05),
                        (0.9, [Some((m + 1, 0.1)), None], 0.0),
                        (0.8, [Some((3, 0.1)), Some((m, 0.1))], -0.02),
                    ] {
                        be.update(&Update {
                            scale: s,
                            cols,
                            prev_coef: p,
                            rotate: true,
                        })
                        .unwrap();
                    }
                    let idx: Vec<usize> = (0..m).collect();
                    let (mut g, mut gpv) = (vec![0.0; m], vec![0.0; m]);
                    be.gather(&idx, &mut g).unwrap();
                    be.gather_prev(&idx, &mut gpv).unwrap();
                    let mut e = vec![0.0; 3];
                    be.column_entries(m + 1, &[0, 3, 4999], &mut e).unwrap();
                    let red = be.reduce(&al).unwrap();
                    let q = [be.q(3, m), be.q(m + 1, m), be.q_diag(m), be.q_diag(m + 1)];
                    gs.push((g, gpv, e, (red.s, red.g_s), q));
                }
                let (x, y) = (&gs[0], &gs[1]);
                for i in 0..m {
                    assert!(
                        (x.0[i] - y.0[i]).abs() < tol,
                        "g[{i}]: {} vs {}",
                        x.0[i],
                        y.0[i]
                    );
                    assert!((x.1[i] - y.1[i]).abs() < tol, "g⁻[{i}]");
                }
                for k in 0..3 {
                    assert!((x.2[k] - y.2[k]).abs() < tol, "Q entry {k} of the guest");
                }
                assert_eq!(x.4, y.4, "Q at guests, exact on both");
                if precision == Precision::F64 {
                    assert_eq!(x.3.0, y.3.0, "argmin");
                }
                assert!((x.3.1 - y.3.1).abs() < tol);
            }
        }
    }

    /// Many repeated rows (40 patterns over 5,000 rows, labels drawn per row): the backend
    /// computes columns over the distinct rows only and gives the same g, g⁻ and Q entries.
    #[test]
    fn repeated_rows_are_computed_once_and_give_exact_columns() {
        for sparse in [false, true] {
            let (pat, _) = random_problem(40, 9, sparse, 11);
            let mut r = SplitMix64::new(5);
            let rows: Vec<usize> = (0..5000).map(|_| r.below(40)).collect();
            let mut ds = pat.subset(&rows);
            ds.labels = (0..5000)
                .map(|_| if r.next_f64() < 0.5 { 1.0 } else { -1.0 })
                .collect();
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.4 }, 3.0).unwrap();
            for precision in [Precision::F64, Precision::F32] {
                let cfg = CpuConfig {
                    cache_bytes: 1 << 20,
                    precision: Some(precision),
                    ..CpuConfig::default()
                };
                let mut be: Box<dyn Backend> = match precision {
                    Precision::F64 => Box::new(CpuBackend::<f64>::new(&prob, cfg)),
                    Precision::F32 => Box::new(CpuBackend::<f32>::new(&prob, cfg)),
                };
                be.enable_prev();
                let mut a = ActiveSet::new(prob.len());
                a.set(17, 1.0);
                be.set_alpha(&a).unwrap();
                be.update(&Update {
                    scale: 0.5,
                    cols: [Some((4000, 0.25)), Some((17, 0.25))],
                    prev_coef: 0.1,
                    rotate: true,
                })
                .unwrap();
                let idx: Vec<usize> = (0..prob.len()).collect();
                let (mut g, mut gp) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
                be.gather(&idx, &mut g).unwrap();
                be.gather_prev(&idx, &mut gp).unwrap();
                let tol = if precision == Precision::F64 {
                    1e-12
                } else {
                    1e-6
                };
                for i in 0..prob.len() {
                    let want = 0.85 * prob.q(i, 17) + 0.25 * prob.q(i, 4000);
                    assert!((g[i] - want).abs() < tol, "row {i}: {} vs {want}", g[i]);
                    // The start's g (a point's column: in the columns' precision).
                    assert!((gp[i] - prob.q(i, 17)).abs() < tol);
                }
                let red = be.reduce(&a).unwrap();
                let s = (0..g.len()).min_by(|&x, &y| g[x].total_cmp(&g[y])).unwrap();
                assert_eq!((red.s, red.g_s), (s, g[s]));
                let mut e = vec![0.0; 3];
                be.column_entries(123, &[0, 123, 4999], &mut e).unwrap();
                for (k, i) in [0usize, 123, 4999].into_iter().enumerate() {
                    assert!((e[k] - prob.q(i, 123)).abs() < tol, "Q[{i}, 123]");
                }
                // Two columns over 40 distinct rows, plus column 123's.
                assert_eq!(be.stats().columns_computed, 3);
                // A run of updates (PARTAN's shape, columns of repeated and fresh rows): g and
                // g⁻ follow the dense recurrence over Q's entries row by row, and the minimum
                // is the first row holding the smallest entry.
                let mut want: Vec<f64> = g.clone();
                let mut want_p: Vec<f64> = gp.clone();
                let steps: [(f64, usize, f64, usize, f64, f64); 5] = [
                    (0.9, 4000, 0.05, 123, 0.05, -0.02),
                    (0.8, 17, 0.2, 17, 0.0, 0.1),
                    (0.95, 2, 0.05, 4999, 0.0, 0.0),
                    (0.7, 123, 0.3, 2, 0.0, 0.05),
                    (1.0, 4000, -0.01, 3, 0.01, 0.0),
                ];
                for (n, &(s, j0, a0, j1, a1, p)) in steps.iter().enumerate() {
                    let cols = if a1 == 0.0 {
                        [Some((j0, a0)), None]
                    } else {
                        [Some((j0, a0)), Some((j1, a1))]
                    };
                    be.update(&Update {
                        scale: s,
                        cols,
                        prev_coef: p,
                        rotate: true,
                    })
                    .unwrap();
                    for i in 0..prob.len() {
                        let old = want[i];
                        want[i] = s * old + p * want_p[i] + a0 * prob.q(i, j0);
                        if a1 != 0.0 {
                            want[i] += a1 * prob.q(i, j1);
                        }
                        want_p[i] = old;
                    }
                    be.gather(&idx, &mut g).unwrap();
                    be.gather_prev(&idx, &mut gp).unwrap();
                    for i in 0..prob.len() {
                        assert!((g[i] - want[i]).abs() < tol, "step {n} row {i}");
                        assert!((gp[i] - want_p[i]).abs() < tol, "step {n} row {i} (g⁻)");
                    }
                    let red = be.reduce(&a).unwrap();
                    let s = (0..g.len()).min_by(|&x, &y| g[x].total_cmp(&g[y])).unwrap();
                    assert_eq!((red.s, red.g_s), (s, g[s]), "step {n}");
                }
            }
        }
    }

    #[test]
    fn update_matches_exact_columns() {
        for (sparse, kernel) in [
            (false, Kernel::Rbf { gamma: 0.7 }),
            (true, Kernel::Rbf { gamma: 0.3 }),
            (
                false,
                Kernel::Poly {
                    gamma: 0.5,
                    coef0: 1.0,
                    degree: 3,
                },
            ),
            (true, Kernel::Linear),
        ] {
            let (ds, y) = random_problem(5000, 13, sparse, 3);
            assert_eq!(ds.is_dense(), !sparse);
            let prob = Problem::new(&ds, y, kernel, 2.0).unwrap();
            assert_eq!(
                matches!(Layout::new(&ds), Layout::Dense { .. }),
                !sparse,
                "this test must exercise both column loops"
            );
            let mut be = CpuBackend::<f64>::new(
                &prob,
                CpuConfig {
                    cache_bytes: 0,
                    precision: Some(Precision::F64),
                    ..CpuConfig::default()
                },
            );
            be.enable_prev();
            let mut a = ActiveSet::new(prob.len());
            a.set(17, 1.0);
            be.set_alpha(&a).unwrap();
            be.update(&Update {
                scale: 0.5,
                cols: [Some((4000, 0.25)), Some((17, 0.25))],
                prev_coef: 0.1,
                rotate: true,
            })
            .unwrap();
            let mut g = vec![0.0; prob.len()];
            let mut gp = vec![0.0; prob.len()];
            let idx: Vec<usize> = (0..prob.len()).collect();
            be.gather(&idx, &mut g).unwrap();
            be.gather_prev(&idx, &mut gp).unwrap();
            for i in (0..prob.len()).step_by(37) {
                let want = 0.85 * prob.q(i, 17) + 0.25 * prob.q(i, 4000);
                assert!(
                    (g[i] - want).abs() < 1e-12,
                    "{kernel:?} row {i}: {} vs {want}",
                    g[i]
                );
                assert!((gp[i] - prob.q(i, 17)).abs() < 1e-12);
            }
            let red = be.reduce(&a).unwrap();
            let (mut s, mut gs) = (0, f64::INFINITY);
            for (i, &v) in g.iter().enumerate() {
                if v < gs {
                    gs = v;
                    s = i;
                }
            }
            assert_eq!((red.s, red.g_s), (s, gs));
            let mut e = vec![0.0; 3];
            be.column_entries(123, &[0, 123, 4999], &mut e).unwrap();
            assert!((e[1] - prob.q(123, 123)).abs() < 1e-12);
            assert!((e[2] - prob.q(4999, 123)).abs() < 1e-12);
        }
    }

    /// Columns computed by the blocked prefetch (all the queries in one pass, rows a cache-sized
    /// block at a time, the f32 products' register-blocked tiles from 32 features on) equal the
    /// columns a single-column pass computes, bit for bit.
    #[test]
    fn blocked_columns_equal_single_columns() {
        // Every kernel: the RBF one is finished in the tiles' registers, the others take the
        // packed batches through the stored products.
        for (d, kernel) in [13usize, 40, 300].into_iter().flat_map(|d| {
            let g = 1.0 / d as f64;
            [
                Kernel::Rbf { gamma: g },
                Kernel::Linear,
                Kernel::Poly {
                    gamma: g,
                    coef0: 1.0,
                    degree: 2,
                },
            ]
            .map(|k| (d, k))
        }) {
            let (ds, y) = random_problem(3001, d, false, 5);
            let prob = Problem::new(&ds, y, kernel, 2.0).unwrap();
            let cfg = CpuConfig {
                cache_bytes: 64 << 20,
                precision: Some(Precision::F32),
                ..CpuConfig::default()
            };
            let (mut a, mut b) = (
                CpuBackend::<f32>::new(&prob, cfg),
                CpuBackend::<f32>::new(&prob, cfg),
            );
            // Two passes (two full batches, then one and a partial one): each batch's
            // queries are packed for its own pass.
            for (count, mul, off) in [(16usize, 131usize, 7usize), (13, 173, 11)] {
                let js: Vec<usize> = (0..count).map(|k| (k * mul + off) % prob.len()).collect();
                assert_eq!(
                    a.prefetch(&js),
                    js.len(),
                    "every column computed by the blocked pass"
                );
                let rows: Vec<usize> = (0..prob.len()).collect();
                let (mut ea, mut eb) = (vec![0.0; rows.len()], vec![0.0; rows.len()]);
                for &j in &js {
                    a.column_entries(j, &rows, &mut ea).unwrap();
                    b.column_entries(j, &rows, &mut eb).unwrap();
                    for (i, (x, z)) in ea.iter().zip(&eb).enumerate() {
                        assert_eq!(
                            x.to_bits(),
                            z.to_bits(),
                            "{kernel:?} d {d}, column {j}, row {i}"
                        );
                    }
                }
            }
        }
    }

    /// The reduction with the support's entries gathered in parallel: the row-by-row loop's
    /// largest g (ties to the lowest index, NaN never taken), the sums αᵀg and αᵀg⁻ in their
    /// documented order bit for bit, and within roundoff of the one-chain sums.
    #[test]
    fn gathered_reduction_is_the_row_loop() {
        let (ds, y) = random_problem(40_000, 4, false, 17);
        let prob = Problem::new(&ds, y, Kernel::Rbf { gamma: 0.5 }, 1.0).unwrap();
        let m = ds.len();
        for (prev, nan) in [(false, false), (true, false), (true, true)] {
            let cfg = CpuConfig {
                cache_bytes: 16 << 20,
                ..CpuConfig::default()
            };
            let mut be = CpuBackend::<f32>::new(&prob, cfg);
            let mut r = SplitMix64::new(3);
            be.prev = prev;
            be.g = (0..m)
                .map(|i| {
                    if i % 97 == 5 {
                        0.5
                    } else {
                        r.next_f64() * 0.4 - 0.1
                    }
                })
                .collect();
            be.g[123] = f64::NAN;
            be.gp = if prev {
                (0..m).map(|_| r.next_f64() - 0.5).collect()
            } else {
                Vec::new()
            };
            let mut al = ActiveSet::new(m);
            for k in 0..36_000 {
                let i = (k * 7919 + 11) % m;
                if i != 123 {
                    al.set(i, 0.5 + r.next_f64());
                }
            }
            if nan {
                al.set(123, 1.0);
            }
            let got = be.reduce_gathered(&al);
            let (mut v, mut g_v, mut ag, mut agp) = (usize::MAX, f64::NEG_INFINITY, 0.0, 0.0);
            let (mut abs, mut absp) = (0.0, 0.0);
            // The documented order: chunks of REDUCE_CHUNK points, REDUCE_LANES running sums
            // each (point k of a chunk in sum k mod REDUCE_LANES), added in order.
            let (mut chunk, mut chunkp) = ([0.0f64; REDUCE_LANES], [0.0f64; REDUCE_LANES]);
            let (mut ordered, mut orderedp) = (0.0, 0.0);
            let n = al.len();
            for (k, (i, a)) in al.iter().enumerate() {
                let gi = be.g[i];
                if gi > g_v || (gi == g_v && i < v) {
                    g_v = gi;
                    v = i;
                }
                ag += a * gi;
                abs += (a * gi).abs();
                chunk[k % REDUCE_CHUNK % REDUCE_LANES] += a * gi;
                if prev {
                    agp += a * be.gp[i];
                    absp += (a * be.gp[i]).abs();
                    chunkp[k % REDUCE_CHUNK % REDUCE_LANES] += a * be.gp[i];
                }
                if (k + 1) % REDUCE_CHUNK == 0 || k + 1 == n {
                    ordered += chunk.iter().fold(0.0, |s, &x| s + x);
                    orderedp += chunkp.iter().fold(0.0, |s, &x| s + x);
                    (chunk, chunkp) = ([0.0; REDUCE_LANES], [0.0; REDUCE_LANES]);
                }
            }
            assert!(n > 2 * REDUCE_CHUNK, "several chunks");
            assert_eq!(got.0, (v, g_v), "prev {prev}, NaN {nan}");
            assert_eq!(g_v, 0.5, "a tie of the largest");
            assert_eq!(got.1.0.is_nan(), nan);
            assert_eq!(
                got.1.0.to_bits(),
                ordered.to_bits(),
                "prev {prev}, NaN {nan}"
            );
            assert_eq!(
                got.1.1.to_bits(),
                orderedp.to_bits(),
                "prev {prev}, NaN {nan}"
            );
            // Within the sum's roundoff of the one-chain sum in α's order.
            if !nan {
                assert!((got.1.0 - ag).abs() <= 1e-13 * abs, "prev {prev}");
                assert!((got.1.1 - agp).abs() <= 1e-13 * absp, "prev {prev}");
            }
        }
    }

    /// The away candidates the CPU backend scores row by row (or gathers, for a small
    /// support) are those of the default's gathers, bit for bit, bounds included: plain and
    /// deduplicated rows, f32 and f64 columns, over calls whose g moves.
    #[test]
    fn away_candidates_are_the_gathered_ones() {
        use crate::backend::{AwayScratch, away_candidates_by_gathers};
        for (sparse, dup) in [(false, false), (true, false), (false, true)] {
            let (pat, y) = random_problem(20_000, 6, sparse, 31);
            let ds = if dup {
                let mut r = SplitMix64::new(8);
                let rows: Vec<usize> = (0..20_000).map(|_| r.below(500)).collect();
                pat.subset(&rows)
            } else {
                pat
            };
            let labels = if dup { ds.labels.clone() } else { y };
            let prob = Problem::new(&ds, labels, Kernel::Rbf { gamma: 0.7 }, 2.0).unwrap();
            for precision in [Precision::F32, Precision::F64] {
                let cfg = CpuConfig {
                    cache_bytes: 64 << 20,
                    precision: Some(precision),
                    ..CpuConfig::default()
                };
                let mut be = cpu_backend(&prob, cfg);
                let m = ds.len();
                let mut r = SplitMix64::new(5);
                for (round, support) in [(0, 200), (1, 9_000), (2, 15_000), (3, 15_000)] {
                    let mut al = ActiveSet::new(m);
                    for _ in 0..support {
                        al.set(r.below(m), 1.0);
                    }
                    al.scale(1.0 / al.sum());
                    be.set_alpha(&al).unwrap();
                    be.update_many(
                        1.0,
                        &[(round * 7, 0.01), (round * 11 + 1, -0.02), (5, 0.03)],
                    )
                    .unwrap();
                    let red = be.reduce(&al).unwrap();
                    let (mut b1, mut b2) = ((0, f64::NEG_INFINITY), (0, f64::NEG_INFINITY));
                    let (mut o1, mut o2) = (Vec::new(), Vec::new());
                    let (mut s1, mut s2) = (AwayScratch::default(), AwayScratch::default());
                    for k in [16, 16, 100] {
                        be.away_candidates(red.s, red.g_s, &al, k, &mut b1, &mut s1, &mut o1)
                            .unwrap();
                        let a = al.indices();
                        away_candidates_by_gathers(
                            &mut *be, red.s, red.g_s, a, k, &mut b2, &mut s2, &mut o2,
                        )
                        .unwrap();
                        assert_eq!(o1.len(), k.min(al.len()));
                        let bits = |o: &[(f64, usize)]| {
                            o.iter().map(|&(v, i)| (v.to_bits(), i)).collect::<Vec<_>>()
                        };
                        assert_eq!(
                            bits(&o1),
                            bits(&o2),
                            "{sparse} {dup} {precision:?} {round} {k}"
                        );
                        assert_eq!(b1.0, b2.0);
                        assert_eq!(b1.1.to_bits(), b2.1.to_bits());
                    }
                }
            }
        }
    }
}
