//! LRU cache of kernel columns, bounded in bytes (`--cache-mb`), never fewer than two slots
//! (a SWAP step needs two columns at once). Buffers are allocated on first use and reused on
//! eviction, so a warmed-up cache allocates nothing.

use std::collections::HashMap;

struct Slot<T> {
    col: usize,
    last: u64,
    valid: bool,
    data: Vec<T>,
}

/// Columns of length m keyed by column index.
pub struct ColumnCache<T> {
    m: usize,
    capacity: usize,
    slots: Vec<Slot<T>>,
    map: HashMap<usize, usize>,
    clock: u64,
}

impl<T: Copy + Default> ColumnCache<T> {
    /// A cache of columns of length `m` using at most `bytes` (but at least two columns).
    pub fn new(m: usize, bytes: usize) -> Self {
        let per = (m.max(1) * std::mem::size_of::<T>()).max(1);
        let capacity = (bytes / per).clamp(2, 1 << 24);
        ColumnCache {
            m,
            capacity,
            slots: Vec::new(),
            map: HashMap::new(),
            clock: 0,
        }
    }

    /// A cache of exactly `slots` (at least two) columns of length `m`.
    pub fn with_slots(m: usize, slots: usize) -> Self {
        ColumnCache {
            m,
            capacity: slots.max(2),
            slots: Vec::new(),
            map: HashMap::new(),
            clock: 0,
        }
    }

    /// Number of columns it may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The slot holding column j (hit = true, data valid) or a slot assigned to j whose data
    /// the caller must fill and then [`mark_valid`](Self::mark_valid). `pinned` is never evicted.
    pub fn get_or_assign(&mut self, j: usize, pinned: Option<usize>) -> (usize, bool) {
        self.clock += 1;
        if let Some(&s) = self.map.get(&j) {
            let slot = &mut self.slots[s];
            slot.last = self.clock;
            return (s, slot.valid);
        }
        let s = if self.slots.len() < self.capacity {
            self.slots.push(Slot {
                col: usize::MAX,
                last: 0,
                valid: false,
                data: vec![T::default(); self.m],
            });
            self.slots.len() - 1
        } else {
            let mut best = usize::MAX;
            let mut best_t = u64::MAX;
            for (k, sl) in self.slots.iter().enumerate() {
                if Some(k) != pinned && sl.last < best_t {
                    best_t = sl.last;
                    best = k;
                }
            }
            best
        };
        let slot = &mut self.slots[s];
        if slot.col != usize::MAX {
            self.map.remove(&slot.col);
        }
        slot.col = j;
        slot.last = self.clock;
        slot.valid = false;
        self.map.insert(j, s);
        (s, false)
    }

    /// Declares the slot's data filled.
    pub fn mark_valid(&mut self, s: usize) {
        self.slots[s].valid = true;
    }

    /// Read access.
    pub fn data(&self, s: usize) -> &[T] {
        &self.slots[s].data
    }

    /// Raw pointer to the slot's data (for disjoint parallel writes).
    pub fn data_ptr(&mut self, s: usize) -> *mut T {
        self.slots[s].data.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
