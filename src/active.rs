//! The sparse iterate α on the unit simplex: the active set A = {i : α_i > 0} with weights.
//!
//! Dropped vertices are removed with α_i = 0 exactly; insertion, lookup and removal are O(1).

/// Sparse α over m coordinates.
#[derive(Debug, Clone)]
pub struct ActiveSet {
    idx: Vec<usize>,
    w: Vec<f64>,
    pos: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl ActiveSet {
    /// α = 0 over m coordinates.
    pub fn new(m: usize) -> Self {
        ActiveSet {
            idx: Vec::new(),
            w: Vec::new(),
            pos: vec![ABSENT; m],
        }
    }

    /// Number of coordinates m.
    pub fn dim(&self) -> usize {
        self.pos.len()
    }

    /// |A|.
    pub fn len(&self) -> usize {
        self.idx.len()
    }

    /// True when α = 0.
    pub fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    /// α_i.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self.pos[i] {
            ABSENT => 0.0,
            p => self.w[p as usize],
        }
    }

    /// Each point's position in [`indices`](Self::indices), [`ActiveSet::OUT`] for the points
    /// outside A: the membership of a run of points read as one vector.
    pub fn positions(&self) -> &[u32] {
        &self.pos
    }

    /// The position [`positions`](Self::positions) gives a point outside A.
    pub const OUT: u32 = ABSENT;

    /// True when i ∈ A.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.pos[i] != ABSENT
    }

    /// Sets α_i = v; v ≤ 0 removes i (α_i = 0 exactly).
    pub fn set(&mut self, i: usize, v: f64) {
        if v <= 0.0 {
            self.remove(i);
            return;
        }
        match self.pos[i] {
            ABSENT => {
                self.pos[i] = self.idx.len() as u32;
                self.idx.push(i);
                self.w.push(v);
            }
            p => self.w[p as usize] = v,
        }
    }

    /// α_i = 0 exactly.
    pub fn remove(&mut self, i: usize) {
        let p = self.pos[i];
        if p == ABSENT {
            return;
        }
        let p = p as usize;
        self.pos[i] = ABSENT;
        self.idx.swap_remove(p);
        self.w.swap_remove(p);
        if p < self.idx.len() {
            self.pos[self.idx[p]] = p as u32;
        }
    }

    /// α ← s·α (s = 0 clears).
    pub fn scale(&mut self, s: f64) {
        if s == 0.0 {
            self.clear();
        } else {
            self.w.iter_mut().for_each(|w| *w *= s);
        }
    }

    /// α = 0.
    pub fn clear(&mut self) {
        for &i in &self.idx {
            self.pos[i] = ABSENT;
        }
        self.idx.clear();
        self.w.clear();
    }

    /// Indices of A, in storage order.
    pub fn indices(&self) -> &[usize] {
        &self.idx
    }

    /// Weights, aligned with [`indices`](Self::indices).
    pub fn weights(&self) -> &[f64] {
        &self.w
    }

    /// Position of i in [`indices`](Self::indices), None when α_i = 0.
    #[inline]
    pub fn position(&self, i: usize) -> Option<usize> {
        match self.pos[i] {
            ABSENT => None,
            p => Some(p as usize),
        }
    }

    /// Weights for in-place rewriting, aligned with [`indices`](Self::indices). A weight
    /// written ≤ 0 must be [`remove`](Self::remove)d before the set is used again.
    pub fn weights_mut(&mut self) -> &mut [f64] {
        &mut self.w
    }

    /// (i, α_i) over A.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.idx.iter().copied().zip(self.w.iter().copied())
    }

    /// Σ α_i.
    pub fn sum(&self) -> f64 {
        self.w.iter().sum()
    }

    /// Copies `other` into self (same dimension), reusing storage.
    pub fn copy_from(&mut self, other: &ActiveSet) {
        self.clear();
        self.idx.extend_from_slice(&other.idx);
        self.w.extend_from_slice(&other.w);
        for (p, &i) in self.idx.iter().enumerate() {
            self.pos[i] = p as u32;
        }
    }

    /// Removes every i with α_i ≤ `tol` (used to clean rounding dust after an affine step).
    pub fn prune(&mut self, tol: f64) {
        let mut p = 0;
        while p < self.idx.len() {
            if self.w[p] <= tol {
                let i = self.idx[p];
                self.remove(i);
            } else {
                p += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_remove() {
        let mut a = ActiveSet::new(10);
        a.set(3, 0.5);
        a.set(7, 0.25);
        a.set(1, 0.25);
        assert_eq!(a.len(), 3);
        a.remove(3);
        assert_eq!(a.get(3), 0.0);
        assert_eq!(a.get(7), 0.25);
        assert_eq!(a.get(1), 0.25);
        a.set(7, 0.0);
        assert!(!a.contains(7));
        assert_eq!(a.len(), 1);
        a.scale(2.0);
        assert_eq!(a.get(1), 0.5);
        let mut b = ActiveSet::new(10);
        b.copy_from(&a);
        assert_eq!(b.get(1), 0.5);
        assert_eq!(b.len(), 1);
    }
}
