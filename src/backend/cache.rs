//! LRU cache of kernel columns, bounded in bytes (`--cache-mb`), never fewer than two slots
//! (a SWAP step needs two columns at once) nor more than there are columns.
//!
//! The cache grows only when growing pays. A slot's memory is supplied by the operating
//! system on first write, page by page, and these first-touch page faults cost about as much
//! as computing the column: a cache that grew to its bound on every miss trains slower with a
//! large bound than with a small one wherever it hardly ever hits (PARTAN mostly asks for
//! columns it has never used). So past [`BASE_SLOTS`] a miss reuses the least recently used
//! slot, and the cache takes a new slot only when the missed column is one it evicted
//! recently (a "ghost" hit: a larger cache would have served it), the rule of adaptive caches
//! such as ARC. "Recently" means among the last slots/2 evictions, so a ghost hit says a cache
//! half again as large would have hit: remembering every eviction lets hits spread over reuse
//! distances of thousands grow the cache by thousands of columns, whose first-touch faults
//! cost more than those few hits save, while data whose reuses are short still grow it.
//!
//! Ghost hits say that a larger cache would hit, not that its hits pay for its faults: where
//! columns are cheap (a few features, 60,000 rows: a column takes about as long as faulting
//! in its slot) a 4 GiB bound grew to 4 GiB and trained 3–4× slower than 1 GiB. So past
//! [`FREE_GROWTH_BYTES`] of slots, growth into pages not yet written is bounded by its cost:
//! the backend prices a fresh slot in columns (the pages' faults over a column's measured
//! time, [`ColumnCache::set_price`]), and the fresh slots may cost at most [`FAULT_SHARE`] of
//! the columns computed so far. Slots whose pages an earlier cache wrote are free. The
//! slots live in one zeroed region whose untouched pages cost nothing; a warmed-up cache
//! allocates nothing, and its region is handed on to the next cache when this one is
//! dropped (`pool`: a multi-class set's class pairs, the warm start's rungs and then the whole
//! set), its pages already touched. The region asks for no 2 MiB pages
//! (`madvise(MADV_HUGEPAGE)`): with `defrag = madvise` the kernel compacts memory on those
//! faults, which makes training slower. The pages of the next slots are populated ahead of the
//! cache's growth in the team's idle time ([`super::prefault`]), so a column pass rarely takes a
//! fault itself.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;

/// Slots taken freely before the cache asks for evidence that growing pays.
pub const BASE_SLOTS: usize = 32;

/// The share of the column computations' time that first-touch faults of fresh slots may
/// add, past [`FREE_GROWTH_BYTES`] ([`ColumnCache::set_price`]).
pub const FAULT_SHARE: f64 = 0.1;

/// Bytes of slots the cache takes on ghost hits alone, whatever they cost to fault in.
pub const FREE_GROWTH_BYTES: usize = 256 << 20;

/// "No slot" in the recency list.
const NIL: usize = usize::MAX;

struct Slot {
    col: usize,
    valid: bool,
    /// Neighbours in the recency list: `newer` towards the most recently used.
    newer: usize,
    older: usize,
}

/// Columns of length m keyed by column index.
pub struct ColumnCache<T: Send + 'static> {
    m: usize,
    capacity: usize,
    slots: Vec<Slot>,
    /// capacity × m values (slot k at k·m), reserved on the first assignment.
    region: Vec<T>,
    map: HashMap<usize, usize>,
    /// Most and least recently used slots (ends of the recency list; NIL when empty): a hit
    /// and a miss cost O(1) whatever the number of slots.
    newest: usize,
    oldest: usize,
    /// Columns evicted recently (at most `capacity`), oldest first.
    ghosts: VecDeque<usize>,
    ghost_set: HashSet<usize>,
    /// Slots the cache may use now (grows from BASE_SLOTS towards `capacity`).
    allowed: usize,
    /// What taking a fresh slot costs, in computations of a column (see
    /// [`set_price`](Self::set_price)); 0 while unknown.
    price: f64,
    /// Columns assigned a slot because the cache lacked them (its misses so far).
    misses: u64,
    /// Values at the start of the region whose pages have been written (by this cache or by
    /// the one that left the region): slots within them cost no first-touch faults.
    touched: usize,
    /// Bytes of slots growth takes without weighing their faults ([`FREE_GROWTH_BYTES`]).
    free_bytes: usize,
    /// The byte budget in values: a region reserved whole is reserved up to this large, so
    /// that a later cache of the same budget can take it over ([`pool::take_large`]).
    budget: usize,
}

impl<T: Copy + Default + Send + 'static> ColumnCache<T> {
    /// A cache of columns of length `m` using at most `bytes` (but at least two columns).
    pub fn new(m: usize, bytes: usize) -> Self {
        let per = (m.max(1) * std::mem::size_of::<T>()).max(1);
        let capacity = (bytes / per).min(m).clamp(2, 1 << 24);
        ColumnCache {
            m,
            capacity,
            slots: Vec::new(),
            region: Vec::new(),
            map: HashMap::default(),
            newest: NIL,
            oldest: NIL,
            ghosts: VecDeque::new(),
            ghost_set: HashSet::default(),
            allowed: BASE_SLOTS.max(2),
            price: 0.0,
            misses: 0,
            touched: 0,
            free_bytes: FREE_GROWTH_BYTES,
            budget: bytes / std::mem::size_of::<T>().max(1),
        }
    }

    /// A cache of exactly `slots` (at least two) columns of length `m`.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub fn with_slots(m: usize, slots: usize) -> Self {
        ColumnCache {
            m,
            capacity: slots.max(2),
            slots: Vec::new(),
            region: Vec::new(),
            map: HashMap::default(),
            newest: NIL,
            oldest: NIL,
            ghosts: VecDeque::new(),
            ghost_set: HashSet::default(),
            allowed: BASE_SLOTS.max(2),
            price: 0.0,
            misses: 0,
            touched: 0,
            free_bytes: FREE_GROWTH_BYTES,
            budget: slots.max(2) * m,
        }
    }

    /// Number of columns it may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of slots it may use now (grows towards [`capacity`](Self::capacity)).
    pub fn usable(&self) -> usize {
        self.allowed.min(self.capacity)
    }

    /// The slot holding column j (hit = true, data valid) or a slot assigned to j whose data
    /// the caller must fill and then [`mark_valid`](Self::mark_valid). `pinned` is never evicted.
    pub fn get_or_assign(&mut self, j: usize, pinned: Option<usize>) -> (usize, bool) {
        if let Some(&s) = self.map.get(&j) {
            self.unlink(s);
            self.push_newest(s);
            return (s, self.slots[s].valid);
        }
        self.misses += 1;
        if self.ghost_set.remove(&j) {
            // A larger cache would have hit: allow an eighth more slots (geometric growth,
            // so a long reuse distance is reached in a few steps), within what the misses
            // so far pay for.
            let grown = (self.allowed + self.allowed / 8 + 1).min(self.growth_bound());
            self.allowed = self.allowed.max(grown).min(self.capacity);
        }
        // A slot freed by `restrict` (the least recently used end) before any growth.
        let free = self.oldest != NIL && self.slots[self.oldest].col == usize::MAX;
        let grow = !free && self.slots.len() < self.allowed.min(self.capacity);
        let s = if grow {
            if (self.slots.len() + 1) * self.m > self.region.len() {
                self.reserve();
            }
            self.slots.push(Slot {
                col: usize::MAX,
                valid: false,
                newer: NIL,
                older: NIL,
            });
            self.touched = self.touched.max(self.slots.len() * self.m);
            self.publish_frontier();
            self.slots.len() - 1
        } else {
            // The least recently used slot, or the one before it when that one is pinned.
            let mut s = self.oldest;
            if Some(s) == pinned {
                s = self.slots[s].newer;
            }
            self.unlink(s);
            s
        };
        self.push_newest(s);
        let window = self.ghost_window();
        let slot = &mut self.slots[s];
        if slot.col != usize::MAX {
            self.map.remove(&slot.col);
            if self.ghost_set.insert(slot.col) {
                self.ghosts.push_back(slot.col);
            }
            while self.ghosts.len() > window {
                if let Some(old) = self.ghosts.pop_front() {
                    self.ghost_set.remove(&old);
                }
            }
        }
        slot.col = j;
        slot.valid = false;
        self.map.insert(j, s);
        (s, false)
    }

    /// Column length.
    pub fn len(&self) -> usize {
        self.m
    }

    /// Drops every column and makes the slots columns of length `m`, keeping the region: its
    /// pages, already touched, cost no page faults when the next backend fills them (after
    /// the working set grows) — and the byte budget stays.
    pub fn clear_to(&mut self, m: usize) {
        let budget = self.capacity * self.m;
        self.map.clear();
        self.ghosts.clear();
        self.ghost_set.clear();
        self.slots.clear();
        self.newest = NIL;
        self.oldest = NIL;
        self.m = m.max(1);
        self.capacity = (budget / self.m).min(self.m).clamp(2, 1 << 24);
        if self.region.len() < self.capacity * self.m {
            self.free_region();
        }
    }

    /// Restricts every column to the rows `keep` (ascending) in place and renumbers column j
    /// as `key(j)` (None drops it): the region, already touched, is reused — a fresh one costs
    /// a page fault per 4 KiB on first write — and the byte budget stays. Dropped slots
    /// become the least recently used. Slot s moves from s·m to s·n: forward, each read at or
    /// past every write still to come, so one sequential pass is safe.
    pub fn restrict(&mut self, keep: &[usize], key: impl Fn(usize) -> Option<usize>) {
        let (m, n) = (self.m, keep.len());
        assert!(n >= 1 && n <= m, "restricting {m} rows to {n}");
        debug_assert!(keep.windows(2).all(|w| w[0] < w[1]) && keep[n - 1] < m);
        self.map.clear();
        self.ghosts.clear();
        self.ghost_set.clear();
        for s in 0..self.slots.len() {
            let new = if self.slots[s].valid {
                key(self.slots[s].col)
            } else {
                None
            };
            match new {
                Some(j) => {
                    let (src, dst) = (s * m, s * n);
                    for (k, &r) in keep.iter().enumerate() {
                        self.region[dst + k] = self.region[src + r];
                    }
                    self.slots[s].col = j;
                    self.map.insert(j, s);
                }
                None => {
                    self.slots[s].col = usize::MAX;
                    self.slots[s].valid = false;
                    self.unlink(s);
                    self.push_oldest(s);
                }
            }
        }
        let budget = self.capacity * m;
        self.m = n;
        self.capacity = (budget / n).min(n).clamp(2, 1 << 24).max(self.slots.len());
        self.publish_frontier();
    }

    /// Puts slot s (not in the list) at its least recent end.
    fn push_oldest(&mut self, s: usize) {
        self.slots[s].newer = self.oldest;
        self.slots[s].older = NIL;
        if self.oldest == NIL {
            self.newest = s;
        } else {
            self.slots[self.oldest].older = s;
        }
        self.oldest = s;
    }

    /// Takes slot s out of the recency list.
    fn unlink(&mut self, s: usize) {
        let (newer, older) = (self.slots[s].newer, self.slots[s].older);
        if newer == NIL {
            self.newest = older;
        } else {
            self.slots[newer].older = older;
        }
        if older == NIL {
            self.oldest = newer;
        } else {
            self.slots[older].newer = newer;
        }
        self.slots[s].newer = NIL;
        self.slots[s].older = NIL;
    }

    /// Puts slot s (not in the list) at its most recent end.
    fn push_newest(&mut self, s: usize) {
        self.slots[s].older = self.newest;
        self.slots[s].newer = NIL;
        if self.newest == NIL {
            self.oldest = s;
        } else {
            self.slots[self.newest].newer = s;
        }
        self.newest = s;
    }

    /// How many evicted columns are remembered: a ghost hit then means a cache a quarter
    /// larger would have hit.
    fn ghost_window(&self) -> usize {
        (self.slots.len() / 2).max(8)
    }

    /// The slots growth may reach: every slot while the price is unknown; else the slots of
    /// [`FREE_GROWTH_BYTES`], those whose pages are written already, or [`BASE_SLOTS`] plus
    /// the fresh slots whose faults cost [`FAULT_SHARE`] of the columns computed so far (one
    /// per miss), whichever is most.
    fn growth_bound(&self) -> usize {
        if self.price <= 0.0 {
            return self.capacity;
        }
        let m = self.m.max(1);
        let paid = (self.misses as f64 * FAULT_SHARE / self.price).min(self.capacity as f64);
        let free = self.free_bytes / (m * std::mem::size_of::<T>()).max(1);
        (BASE_SLOTS + paid as usize).max(self.touched / m).max(free)
    }

    /// Sets what a fresh slot costs against computing a column: the first-touch faults of its
    /// pages over the time a column takes, both measured by the caller.
    pub fn set_price(&mut self, price: f64) {
        if price.is_finite() && price >= 0.0 {
            self.price = price;
        }
    }

    /// Lets the cache use at least `n` slots (never more than its capacity): the working-set
    /// solver needs all of a block's columns resident at once.
    pub fn ensure_usable(&mut self, n: usize) {
        self.allowed = self.allowed.max(n.min(self.capacity));
    }

    /// True when column j is resident with valid data (the LRU order is not touched).
    pub fn holds(&self, j: usize) -> bool {
        self.map.get(&j).is_some_and(|&s| self.slots[s].valid)
    }

    /// Column j's data when it is resident and valid (the LRU order is not touched).
    pub fn column(&self, j: usize) -> Option<&[T]> {
        let s = *self.map.get(&j)?;
        self.slots[s].valid.then(|| self.data(s))
    }

    /// Declares the slot's data filled.
    pub fn mark_valid(&mut self, s: usize) {
        self.slots[s].valid = true;
    }

    /// Read access.
    pub fn data(&self, s: usize) -> &[T] {
        &self.region[s * self.m..(s + 1) * self.m]
    }

    /// Raw pointer to the slot's data (for disjoint parallel writes).
    pub fn data_ptr(&mut self, s: usize) -> *mut T {
        self.region[s * self.m..(s + 1) * self.m].as_mut_ptr()
    }

    /// Reserves the zeroed region of every slot, or room for twice the slots in use where the
    /// whole region is small. `vec![zero; n]` of a float type is a calloc: a large one maps
    /// fresh zero pages that cost nothing until first written, but a small one is carved from
    /// the heap and cleared at once (the allocator maps regions below [`EAGER_BYTES`] from
    /// freed memory), which for the many small problems of a multi-class set cleared far more
    /// than their solves ever touch. A large region is the one an earlier cache left
    /// ([`pool::keep_large`]) where there is one, its pages touched already, else up to the
    /// whole byte budget (untouched pages cost nothing), so that a later cache can take it over.
    /// Growing moves the slots in use (no slot's data is borrowed across
    /// [`get_or_assign`](Self::get_or_assign)).
    fn reserve(&mut self) {
        let full = self.capacity * self.m;
        if full * std::mem::size_of::<T>() >= EAGER_BYTES {
            if self.region.len() < full {
                debug_assert!(self.slots.len() <= 1, "a whole region is reserved once");
                // Up to four times the slots' own need: a ladder's next rung (twice the points)
                // needs four times as much until the budget binds.
                let (fresh, touched) = pool::take_large::<T>(full).unwrap_or_else(|| {
                    (vec![T::default(); full.max(self.budget.min(4 * full))], 0)
                });
                let old = std::mem::replace(&mut self.region, fresh);
                release(old, self.touched);
                self.touched = touched;
            }
            return;
        }
        let slots = (2 * (self.region.len() / self.m.max(1)))
            .max(2 * BASE_SLOTS)
            .min(self.capacity);
        super::prefault::retract(self.region.as_ptr().cast());
        let need = slots * self.m;
        if let Some(mut spare) = pool::take::<T>(need) {
            // A region a cache of an earlier problem left, its pages touched already: the
            // slots in use move into it, and it keeps its length (its whole content is
            // initialised; slots beyond the ones in use are written before they are read).
            let used = self.slots.len() * self.m;
            spare[..used].copy_from_slice(&self.region[..used]);
            let old = std::mem::replace(&mut self.region, spare);
            release(old, self.touched);
            self.touched = self.region.len();
            return;
        }
        self.region.resize(need, T::default());
        self.touched = self.region.len();
    }

    /// Tells [`super::prefault`] where the slots in use end: the team's idle time populates
    /// the pages of the next ones.
    fn publish_frontier(&self) {
        let sz = std::mem::size_of::<T>();
        super::prefault::publish(
            self.region.as_ptr().cast(),
            self.region.len() * sz,
            self.slots.len() * self.m * sz,
        );
    }

    fn free_region(&mut self) {
        release(std::mem::take(&mut self.region), self.touched);
        self.touched = 0;
    }
}

impl<T: Send + 'static> Drop for ColumnCache<T> {
    fn drop(&mut self) {
        release(std::mem::take(&mut self.region), self.touched);
    }
}

/// Regions from this size on are reserved whole at once (the allocator maps them from fresh,
/// untouched pages); smaller ones grow with the slots in use ([`ColumnCache::reserve`]).
const EAGER_BYTES: usize = 32 << 20;

/// Regions from this size on are returned to the system on a thread of their own.
const FREE_ASIDE: usize = 64 << 20;

/// Frees a region: a large one on a thread of its own, since unmapping costs about 0.14 µs per
/// page it holds (ijcnn1's 556 MB: 0.02 s) and the caller has better things to do — write the
/// model, or start the next round.
fn release<T: Send + 'static>(region: Vec<T>, touched: usize) {
    if region.is_empty() {
        return;
    }
    super::prefault::retract(region.as_ptr().cast());
    let bytes = region.len() * std::mem::size_of::<T>();
    if bytes < EAGER_BYTES {
        pool::put(region);
    } else {
        pool::keep_large(region, touched);
    }
}

/// Frees the large region a dropped cache left for the next one ([`pool::keep_large`]), if
/// any: called when training ends, so that memory the next problem's cache would have taken
/// over is returned to the system.
pub fn release_kept() {
    if let Some(region) = pool::take_any_large() {
        region.free();
    }
}

/// Frees `region`, a large one on a thread of its own.
fn free_aside<T: Send + 'static>(region: Vec<T>) {
    let bytes = region.len() * std::mem::size_of::<T>();
    if bytes >= FREE_ASIDE {
        // Without a thread (the system refuses one), freed here by the closure's drop.
        let _ = std::thread::Builder::new()
            .name("fwsvm-free".into())
            .spawn(move || drop(region));
    }
}

/// Small regions (below [`EAGER_BYTES`]) kept for the next cache: a multi-class set trains
/// one small problem per class pair, and each cache that grew on the heap cleared its region
/// and took a page fault per 4 KiB of it (pendigits' 45 pairs: about a tenth of the training
/// time). A region returned here is handed to the next cache that grows past its own, with
/// its pages touched and its content initialised (old columns, overwritten before they are
/// read). At most [`pool::MAX_BYTES`] are kept; a region that does not fit is freed.
///
/// One large region is kept too, the last one a cache left, for the next cache that reserves
/// its region whole: the warm start's rungs and then the whole problem each have a cache of
/// their own, and each would otherwise fault in up to the byte budget afresh (a 60,000-row,
/// 8-feature set: 650,000 faults, a third of the run's time in the kernel). Training frees it
/// when it ends ([`release_kept`]).
mod pool {
    use std::any::Any;
    use std::sync::Mutex;

    /// Bytes the pool keeps at most.
    pub(super) const MAX_BYTES: usize = 64 << 20;

    struct Pool {
        regions: Vec<(usize, Box<dyn Any + Send>)>,
        bytes: usize,
    }

    static POOL: Mutex<Pool> = Mutex::new(Pool {
        regions: Vec::new(),
        bytes: 0,
    });

    /// Keeps `region` for a later cache when the pool has room for it.
    pub(super) fn put<T: Send + 'static>(region: Vec<T>) {
        let bytes = region.len() * std::mem::size_of::<T>();
        let Ok(mut p) = POOL.lock() else { return };
        if p.bytes + bytes > MAX_BYTES {
            return;
        }
        p.bytes += bytes;
        p.regions.push((bytes, Box::new(region)));
    }

    /// A region kept, type-erased with the means to free it.
    pub(crate) struct Large(Box<dyn Any + Send>, fn(Box<dyn Any + Send>));

    impl Large {
        /// Frees the region (on a thread of its own when large).
        pub(crate) fn free(self) {
            (self.1)(self.0)
        }
    }

    /// At most one large region, of any value type.
    #[derive(Default)]
    pub(super) struct LargeSlot(Option<Large>);

    impl LargeSlot {
        /// Keeps `region`; returns the region it replaces.
        pub(super) fn keep<T: Send + 'static>(&mut self, region: Vec<T>) -> Option<Large> {
            fn free<T: Send + 'static>(b: Box<dyn Any + Send>) {
                if let Ok(v) = b.downcast::<Vec<T>>() {
                    super::free_aside(*v);
                }
            }
            self.0.replace(Large(Box::new(region), free::<T>))
        }

        /// The region kept, if it holds `T` and at least `len` values.
        pub(super) fn take<T: Send + 'static>(&mut self, len: usize) -> Option<Vec<T>> {
            let fits = self
                .0
                .as_ref()
                .and_then(|l| l.0.downcast_ref::<Vec<T>>())
                .is_some_and(|v| v.len() >= len);
            if !fits {
                return None;
            }
            self.0.take()?.0.downcast::<Vec<T>>().ok().map(|v| *v)
        }

        /// The region kept, whatever it holds.
        pub(super) fn take_any(&mut self) -> Option<Large> {
            self.0.take()
        }
    }

    static LARGE: Mutex<LargeSlot> = Mutex::new(LargeSlot(None));

    /// Values at the start of the large region kept whose pages were written.
    static LARGE_TOUCHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// Keeps `region` (its first `touched` values' pages written) as the large region for the
    /// next cache, freeing the one it replaces.
    pub(super) fn keep_large<T: Send + 'static>(region: Vec<T>, touched: usize) {
        let old = match LARGE.lock() {
            Ok(mut slot) => {
                let touched = touched.min(region.len());
                LARGE_TOUCHED.store(touched, std::sync::atomic::Ordering::Relaxed);
                slot.keep(region)
            }
            Err(_) => return,
        };
        if let Some(old) = old {
            old.free();
        }
    }

    /// The large region kept, if it holds `T` and at least `len` values, and how many values
    /// at its start have their pages written.
    pub(super) fn take_large<T: Send + 'static>(len: usize) -> Option<(Vec<T>, usize)> {
        let mut slot = LARGE.lock().ok()?;
        let region = slot.take(len)?;
        Some((
            region,
            LARGE_TOUCHED.load(std::sync::atomic::Ordering::Relaxed),
        ))
    }

    /// The large region kept, whatever it holds.
    pub(super) fn take_any_large() -> Option<Large> {
        LARGE.lock().ok()?.take_any()
    }

    /// The smallest kept region of `T` with at least `len` values, if any.
    pub(super) fn take<T: Send + 'static>(len: usize) -> Option<Vec<T>> {
        let mut p = POOL.lock().ok()?;
        let best = p
            .regions
            .iter()
            .enumerate()
            .filter_map(|(k, (_, r))| {
                let v = r.downcast_ref::<Vec<T>>()?;
                (v.len() >= len).then_some((v.len(), k))
            })
            .min()?;
        let (bytes, r) = p.regions.swap_remove(best.1);
        p.bytes -= bytes;
        r.downcast::<Vec<T>>().ok().map(|v| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The large region kept goes to a cache of its value type that needs at most its length,
    /// with its memory (the same allocation); keeping another frees the first.
    #[test]
    fn the_large_region_kept_serves_a_cache_that_fits_in_it() {
        let mut slot = pool::LargeSlot::default();
        let region = vec![1.5f32; 1000];
        let at = region.as_ptr();
        assert!(slot.keep(region).is_none());
        assert!(slot.take::<f64>(10).is_none(), "another value type");
        assert!(slot.take::<f32>(1001).is_none(), "too short");
        let back = slot.take::<f32>(1000).expect("kept");
        assert_eq!((back.as_ptr(), back.len(), back[999]), (at, 1000, 1.5));
        assert!(slot.take::<f32>(1).is_none(), "taken once");
        assert!(slot.keep(back).is_none());
        let old = slot
            .keep(vec![0.0f64; 10])
            .expect("the f32 region replaced");
        old.free();
        assert!(slot.take::<f32>(1).is_none());
        assert_eq!(slot.take::<f64>(10).map(|v| v.len()), Some(10));
    }

    /// A large cache reserves its whole byte budget, up to four times what its slots need, so
    /// that a later cache of the same budget but longer columns fits in what it leaves. (A
    /// value type of this test's own: no other test's region is handed to it.)
    #[test]
    fn a_large_region_is_the_budget_up_to_four_times_the_slots() {
        #[derive(Clone, Copy, Default)]
        struct Entry(#[allow(dead_code)] f32);
        let m = 3_000; // m² entries (36 MB) reach EAGER_BYTES
        assert!(m * m * 4 >= EAGER_BYTES);
        for (bytes, want) in [(2 * EAGER_BYTES, 2 * EAGER_BYTES / 4), (1 << 30, 4 * m * m)] {
            release_kept(); // the region the case before left
            let mut c: ColumnCache<Entry> = ColumnCache::new(m, bytes);
            assert_eq!(c.capacity(), m);
            c.get_or_assign(0, None);
            assert_eq!(c.region.len(), want, "budget {bytes}");
        }
    }

    /// A small region a dropped cache leaves is taken by the next cache that grows past its
    /// own, with the columns that cache holds moved into it. (A value type of this test's own:
    /// the pool is shared by the whole process.)
    #[test]
    fn a_dropped_caches_region_serves_the_next_cache() {
        #[derive(Clone, Copy, Default, PartialEq, Debug)]
        struct Probe(u32);
        let m = 1000;
        let fill = |c: &mut ColumnCache<Probe>, cols: std::ops::Range<usize>| {
            for j in cols {
                let (s, hit) = c.get_or_assign(j, None);
                assert!(!hit);
                // SAFETY: slot s holds m values.
                unsafe { std::slice::from_raw_parts_mut(c.data_ptr(s), m) }
                    .fill(Probe(j as u32 + 7));
                c.mark_valid(s);
            }
        };
        let mut next: ColumnCache<Probe> = ColumnCache::with_slots(m, 8 * BASE_SLOTS);
        next.allowed = 8 * BASE_SLOTS;
        fill(&mut next, 0..2 * BASE_SLOTS);
        assert_eq!(next.region.len(), 2 * BASE_SLOTS * m);
        let mut first: ColumnCache<Probe> = ColumnCache::with_slots(m, 8 * BASE_SLOTS);
        first.allowed = 8 * BASE_SLOTS;
        fill(&mut first, 0..2 * BASE_SLOTS + 1);
        assert_eq!(first.region.len(), 4 * BASE_SLOTS * m);
        let kept = first.region.as_ptr();
        drop(first);
        // Past its own region, `next` takes the one `first` left.
        fill(&mut next, 2 * BASE_SLOTS..2 * BASE_SLOTS + 1);
        assert_eq!(
            next.region.as_ptr(),
            kept,
            "the dropped cache's region is reused"
        );
        assert_eq!(next.region.len(), 4 * BASE_SLOTS * m);
        for j in 0..2 * BASE_SLOTS + 1 {
            let (s, hit) = next.get_or_assign(j, None);
            assert!(hit);
            assert!(
                next.data(s).iter().all(|&v| v == Probe(j as u32 + 7)),
                "column {j}"
            );
        }
    }

    #[test]
    fn grows_past_the_base_only_on_ghost_hits() {
        let m = 4;
        let c: ColumnCache<f32> = ColumnCache::new(m, (BASE_SLOTS + 10) * m * 4);
        assert_eq!(c.capacity(), m); // never more slots than columns
        let mut c: ColumnCache<f32> = ColumnCache::with_slots(1000, BASE_SLOTS + 10);
        for j in 0..BASE_SLOTS + 5 {
            let (s, hit) = c.get_or_assign(j, None);
            assert!(!hit);
            c.mark_valid(s);
        }
        // Fresh columns past the base reuse slots.
        assert_eq!(c.slots.len(), BASE_SLOTS);
        // Column 0 was evicted: asking for it again lets the cache grow by an eighth.
        let (s, hit) = c.get_or_assign(0, None);
        assert!(!hit);
        c.mark_valid(s);
        assert_eq!(c.slots.len(), BASE_SLOTS + 1);
        assert_eq!(c.allowed, BASE_SLOTS + BASE_SLOTS / 8 + 1);
        assert!(c.get_or_assign(0, None).1);
    }

    /// Priced slots: past the free bytes, growth on ghost hits stops where the fresh slots'
    /// faults reach their share of the misses; slots whose pages were written stay free.
    #[test]
    fn growth_into_fresh_pages_stops_at_its_share_of_the_misses() {
        // Columns of 64 KiB and a 64 MiB bound: a region reserved whole, its pages untouched.
        let m = 16 << 10;
        let cycle = BASE_SLOTS + 8;
        let run = |price: Option<f64>, touched_slots: usize| {
            let mut c = ColumnCache::<f32>::new(m, 64 << 20);
            c.free_bytes = 0;
            if let Some(p) = price {
                c.set_price(p);
            }
            // The region is reserved on the first slot; what it held before (a region an
            // earlier cache left) is set aside for the test's own count.
            let (s, _) = c.get_or_assign(0, None);
            c.mark_valid(s);
            c.touched = touched_slots.max(1) * m;
            // A cycle over 40 columns: with 32 slots each comes back 8 evictions after it
            // left, within the ghost window, so every miss is a ghost hit until 40 slots
            // hold them all.
            for _ in 0..40 {
                for j in 0..cycle {
                    let (s, hit) = c.get_or_assign(j, None);
                    if !hit {
                        c.mark_valid(s);
                    }
                }
            }
            c
        };
        let free = run(None, 0);
        assert!(free.usable() >= cycle, "unpriced: {} slots", free.usable());
        let priced = run(Some(50.0), 0);
        let bound = BASE_SLOTS + (priced.misses as f64 * FAULT_SHARE / 50.0) as usize;
        assert!(
            priced.usable() <= bound,
            "{} slots, bound {bound}",
            priced.usable()
        );
        assert!(priced.usable() < cycle, "{} slots", priced.usable());
        // Pages written already: the bound reaches them.
        let reused = run(Some(50.0), 2 * cycle);
        assert!(reused.usable() >= cycle, "{} slots", reused.usable());
    }

    /// Restricting keeps each kept column's entries at the kept rows under its new number,
    /// drops the others (their slots reused first), and keeps the byte budget.
    #[test]
    fn cleared_to_other_rows_keeps_the_memory_and_no_column() {
        let mut c: ColumnCache<f32> = ColumnCache::new(10, 6 * 10 * 4);
        for j in 0..4 {
            let (s, _) = c.get_or_assign(j, None);
            c.mark_valid(s);
        }
        let region = c.region.as_ptr();
        c.clear_to(20);
        assert_eq!(
            (c.len(), c.capacity()),
            (20, 3),
            "60 values hold 3 columns of 20"
        );
        assert_eq!(c.region.as_ptr(), region, "the region is kept");
        for j in 0..4 {
            assert!(!c.holds(j), "column {j} was over other rows");
        }
        let (s, hit) = c.get_or_assign(1, None);
        assert!(!hit);
        assert_eq!(c.data(s).len(), 20);
        // More rows than the region holds two columns of: a fresh region.
        c.clear_to(40);
        assert_eq!(c.capacity(), 2);
        let (s, _) = c.get_or_assign(0, None);
        assert_eq!(c.data(s).len(), 40);
    }

    #[test]
    fn restrict_keeps_the_kept_columns_in_place() {
        let m = 10;
        let mut c: ColumnCache<f32> = ColumnCache::new(m, 6 * m * 4);
        assert_eq!(c.capacity(), 6);
        for j in [2usize, 5, 7, 9] {
            let (s, hit) = c.get_or_assign(j, None);
            assert!(!hit);
            let col: Vec<f32> = (0..m).map(|i| (100 * j + i) as f32).collect();
            // SAFETY: slot s holds m values.
            unsafe { std::ptr::copy_nonoverlapping(col.as_ptr(), c.data_ptr(s), m) };
            c.mark_valid(s);
        }
        let keep = [1usize, 2, 5, 8, 9];
        let pos = |j: usize| keep.iter().position(|&k| k == j);
        c.restrict(&keep, pos);
        assert_eq!(c.len(), 5);
        assert_eq!(
            c.capacity(),
            5,
            "6·10 values hold 12 columns of 5, at most 5 distinct"
        );
        for (old, new) in [(2usize, 1usize), (5, 2), (9, 4)] {
            assert!(c.holds(new), "column {old} as {new}");
            let (s, hit) = c.get_or_assign(new, None);
            assert!(hit);
            let want: Vec<f32> = keep.iter().map(|&i| (100 * old + i) as f32).collect();
            assert_eq!(c.data(s), &want[..], "column {old}");
        }
        // Column 7 was dropped: its slot is the first one reused.
        let dropped = c.slots.iter().position(|sl| !sl.valid).unwrap();
        let (s, hit) = c.get_or_assign(0, None);
        assert!(!hit);
        assert_eq!(s, dropped);
    }

    #[test]
    fn lru_evicts_oldest_and_respects_pin() {
        let mut c: ColumnCache<f32> = ColumnCache::new(4, 3 * 16);
        assert_eq!(c.capacity(), 3);
        let (a, hit) = c.get_or_assign(10, None);
        assert!(!hit);
        c.mark_valid(a);
        let (b, _) = c.get_or_assign(11, None);
        c.mark_valid(b);
        let (d, _) = c.get_or_assign(12, None);
        c.mark_valid(d);
        assert_eq!(c.get_or_assign(10, None), (a, true)); // 10 now most recent
        let (e, hit) = c.get_or_assign(13, Some(b)); // 11 is oldest but pinned → evict 12
        assert!(!hit);
        assert_eq!(e, d);
        assert!(c.get_or_assign(11, None).1);
        assert!(!c.get_or_assign(12, None).1);
    }
}
