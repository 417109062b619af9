//! The gradient of a problem with repeated rows, kept once per group of equal rows.
//!
//! Rows i with the same features and the same label have the same Q row up to the diagonal:
//! Q_ij = y_i y_j (k(x_i, x_j) + 1) + δ_ij/C. So g = Qα is, for row i of group G,
//!
//! ```text
//! g_i = h_G + d_i,    h_G = y_G Σ_j α_j y_j (k(x_G, x_j) + 1),    d_i = α_i / C
//! ```
//!
//! and every update g ← s·g + p·g⁻ + Σ a_u Q[:, j_u] becomes h ← s·h + p·h⁻ + Σ a_u y_G y_j
//! (k + 1) over the groups, while the rows that were ever an update's column or held α at the
//! last restart (the *touched* rows, where d ≠ 0) keep their own g_i and g⁻_i, updated by
//! the full recurrence with their Q entries — the arithmetic of a backend without groups, so
//! every row's g is the number that backend holds, whichever rows share its group (a
//! distributed run's rank holds only some of them). A row is touched once, taking its group's
//! h. On KDD99-binary that is 117k groups and a few thousand touched rows instead of 395k
//! rows, in group order (which follows the distinct rows, so the columns are read almost in
//! sequence) instead of a gather through a shuffled index.
//!
//! The minimum over all rows is the smaller of two: over the groups that still have an
//! untouched member (where g = h exactly), standing for that member of lowest index; and over
//! the touched rows, each as h + d. Ties go to the lowest row index, as over the full vector.

use super::update::NEGATIVE;

/// Touched rows per task of [`Groups::update_touched_chunks`] (a multiple of the SIMD lanes).
pub const TOUCHED_CHUNK: usize = 256;

/// Groups of equal rows and the gradient kept per group; see the module documentation.
pub struct Groups {
    /// Per group: its distinct row, the label's sign in the top bit ([`NEGATIVE`] for −1).
    /// Groups are ordered by distinct row, so this is non-decreasing in the low bits.
    pub signed: Vec<u32>,
    /// by_rep[r]: the first group of distinct row r or after (length distinct + 1), so the
    /// groups of distinct rows r0..r1 are by_rep[r0]..by_rep[r1].
    pub by_rep: Vec<u32>,
    /// Each row's group.
    of_row: Vec<u32>,
    /// Members of group k: `members[start[k]..start[k + 1]]`, ascending.
    start: Vec<u32>,
    members: Vec<u32>,
    /// Per group: members not touched yet.
    untouched: Vec<u32>,
    /// Per group: its untouched member of lowest index (`u32::MAX` when none).
    pub first: Vec<u32>,
    /// Per group: 1 when every member is touched (h then stands for no row), else 0.
    pub closed: Vec<u8>,
    /// h and h⁻ per group (h⁻ empty until [`Groups::enable_prev`]).
    pub h: Vec<f64>,
    pub hp: Vec<f64>,
    /// g and g⁻ per row, kept on the touched rows only (t⁻ empty until `enable_prev`).
    t: Vec<f64>,
    tp: Vec<f64>,
    /// The touched rows, in the order they were touched (only appended to between resets).
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// Times the touched rows were reset (so a copy of them knows when to start over).
    resets: u64,
    /// The touched rows' new g of [`Groups::update_touched_many`] (kept between calls).
    scratch: Vec<f64>,
}

impl Groups {
    /// Groups rows by (distinct row `rep[i]`, sign of `y[i]`); `distinct` distinct rows.
    pub fn new(rep: &[u32], y: &[f64], distinct: usize) -> Groups {
        let m = rep.len();
        let key = |i: usize| 2 * rep[i] as usize + usize::from(y[i] < 0.0);
        // Group ids in key order (distinct row, then + before −).
        let mut id = vec![u32::MAX; 2 * distinct];
        for i in 0..m {
            id[key(i)] = 0;
        }
        let mut signed = Vec::new();
        for (k, slot) in id.iter_mut().enumerate() {
            if *slot == 0 {
                *slot = signed.len() as u32;
                let r = (k / 2) as u32;
                signed.push(if k % 2 == 1 { r | NEGATIVE } else { r });
            }
        }
        let n = signed.len();
        let mut by_rep = vec![n as u32; distinct + 1];
        for (k, &sg) in signed.iter().enumerate().rev() {
            by_rep[(sg & !NEGATIVE) as usize] = k as u32;
        }
        for r in (0..distinct).rev() {
            by_rep[r] = by_rep[r].min(by_rep[r + 1]);
        }
        let of_row: Vec<u32> = (0..m).map(|i| id[key(i)]).collect();
        let mut start = vec![0u32; n + 1];
        for &k in &of_row {
            start[k as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut members = vec![0u32; m];
        for (i, &k) in of_row.iter().enumerate() {
            members[fill[k as usize] as usize] = i as u32;
            fill[k as usize] += 1;
        }
        let mut g = Groups {
            signed,
            by_rep,
            of_row,
            start,
            members,
            untouched: Vec::new(),
            first: Vec::new(),
            closed: Vec::new(),
            h: vec![0.0; n],
            hp: Vec::new(),
            t: vec![0.0; m],
            tp: Vec::new(),
            touched: Vec::new(),
            is_touched: vec![false; m],
            resets: 0,
            scratch: Vec::new(),
        };
        g.untouch_all();
        g
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.signed.len()
    }

    fn untouch_all(&mut self) {
        let n = self.len();
        for &i in &self.touched {
            self.is_touched[i as usize] = false;
        }
        self.touched.clear();
        self.resets += 1;
        self.untouched = (0..n).map(|k| self.start[k + 1] - self.start[k]).collect();
        self.first = (0..n)
            .map(|k| self.members[self.start[k] as usize])
            .collect();
        self.closed = vec![0; n];
    }

    /// Marks row i as touched: from now on it keeps its own g and g⁻, starting from its
    /// group's.
    fn touch(&mut self, i: usize) {
        if self.is_touched[i] {
            return;
        }
        self.is_touched[i] = true;
        self.touched.push(i as u32);
        let k = self.of_row[i] as usize;
        self.t[i] = self.h[k];
        if !self.tp.is_empty() {
            self.tp[i] = self.hp[k];
        }
        self.untouched[k] -= 1;
        if self.untouched[k] == 0 {
            self.closed[k] = 1;
            self.first[k] = u32::MAX;
        } else if self.first[k] as usize == i {
            let (a, b) = (self.start[k] as usize, self.start[k + 1] as usize);
            let is_touched = &self.is_touched;
            self.first[k] = self.members[a..b]
                .iter()
                .copied()
                .find(|&r| !is_touched[r as usize])
                .expect("an untouched member is left");
        }
    }

    /// g_i.
    #[inline]
    pub fn g(&self, i: usize) -> f64 {
        if self.is_touched[i] {
            self.t[i]
        } else {
            self.h[self.of_row[i] as usize]
        }
    }

    /// g⁻_i (g_i when g⁻ is not kept).
    #[inline]
    pub fn gp(&self, i: usize) -> f64 {
        if self.hp.is_empty() {
            self.g(i)
        } else if self.is_touched[i] {
            self.tp[i]
        } else {
            self.hp[self.of_row[i] as usize]
        }
    }

    /// Sets g (and g⁻ = g when kept) to a full gradient `g` of α: α's rows are touched and
    /// keep their entries; each group with an untouched member takes that member's entry
    /// (the same in every member of an exact gradient: Q's rows of equal points differ only on
    /// the diagonal), and a member whose entry differs from it is touched and keeps its own.
    pub fn set(&mut self, g: &[f64], alpha: &crate::active::ActiveSet) {
        self.untouch_all();
        for (i, _) in alpha.iter() {
            self.touch(i);
        }
        for k in 0..self.len() {
            // A closed group's h is read by no row; its first member's entry keeps it finite.
            let i = if self.closed[k] == 0 {
                self.first[k]
            } else {
                self.members[self.start[k] as usize]
            } as usize;
            self.h[k] = g[i];
        }
        // A row whose entry is not its group's (a working-set round starts from the backend's
        // own g, where a row an update touched keeps the rounding of its own recurrence)
        // keeps its own: every row reads back exactly the g it was given, whichever member
        // the group's h came from (a rank holds only some members).
        for (i, gi) in g.iter().enumerate() {
            if !self.is_touched[i] && gi.to_bits() != self.h[self.of_row[i] as usize].to_bits() {
                self.touch(i);
            }
        }
        for &i in &self.touched {
            self.t[i as usize] = g[i as usize];
        }
        if !self.hp.is_empty() {
            self.hp.copy_from_slice(&self.h);
            self.tp.copy_from_slice(&self.t);
        }
    }

    /// Starts keeping g⁻ (= g now).
    pub fn enable_prev(&mut self) {
        if self.hp.is_empty() {
            self.hp = self.h.clone();
            self.tp = self.t.clone();
        }
    }

    /// Touches the rows `js` (an update's columns, before the update: they take their
    /// groups' h and h⁻ as they stand).
    pub fn touch_rows(&mut self, js: &[usize]) {
        for &j in js {
            self.touch(j);
        }
    }

    /// Applies an update to the touched rows' own g and g⁻ as a backend without groups does
    /// ([`super::update`]'s order: scale·g [+ pc·g⁻], then each column's term `term(i, u)` =
    /// a_u·Q[i, j_u] in turn; g⁻ ← old g when `rotate`), `nu` columns.
    pub fn update_touched(
        &mut self,
        scale: f64,
        pc: f64,
        rotate: bool,
        nu: usize,
        term: impl Fn(usize, usize) -> f64,
    ) {
        let prev = !self.tp.is_empty();
        for &i in &self.touched {
            let i = i as usize;
            let old = self.t[i];
            let mut v = if prev {
                scale * old + pc * self.tp[i]
            } else {
                scale * old
            };
            for u in 0..nu {
                v += term(i, u);
            }
            self.t[i] = v;
            if prev && rotate {
                self.tp[i] = old;
            }
        }
    }

    /// The touched rows in the order they were touched, and how many times they were reset
    /// (between two resets rows are only appended).
    pub fn touched(&self) -> (&[u32], u64) {
        (&self.touched, self.resets)
    }

    /// g ← scale·g + Σ_u term(i, u) on the touched rows for `n` columns, added in column
    /// order: the numbers [`update_touched`](Self::update_touched) gives applied pair by pair
    /// (g⁻ unchanged), in one parallel pass over the rows (a row's own sum in a register:
    /// running it through [`update_touched_chunks`](Self::update_touched_chunks) made KDD99
    /// train 30 % slower).
    pub fn update_touched_many(
        &mut self,
        scale: f64,
        n: usize,
        term: impl Fn(usize, usize) -> f64 + Sync,
    ) {
        use rayon::prelude::*;
        let t = &self.t;
        self.touched
            .par_iter()
            .with_min_len(TOUCHED_CHUNK)
            .map(|&i| {
                let i = i as usize;
                let mut v = scale * t[i];
                for u in 0..n {
                    v += term(i, u);
                }
                v
            })
            .collect_into_vec(&mut self.scratch);
        self.take_scratch();
    }

    /// g ← scale·g + terms on the touched rows, in parallel chunks of [`TOUCHED_CHUNK`]:
    /// `add(k0, rows, v)` gets the chunk's first position among the touched rows, its rows and
    /// their scale·g, and adds the terms.
    pub fn update_touched_chunks(
        &mut self,
        scale: f64,
        add: impl Fn(usize, &[u32], &mut [f64]) + Sync,
    ) {
        use rayon::prelude::*;
        let t = &self.t;
        self.scratch.clear();
        self.scratch.resize(self.touched.len(), 0.0);
        self.touched
            .par_chunks(TOUCHED_CHUNK)
            .zip(self.scratch.par_chunks_mut(TOUCHED_CHUNK))
            .enumerate()
            .for_each(|(c, (rows, v))| {
                for (o, &i) in v.iter_mut().zip(rows) {
                    *o = scale * t[i as usize];
                }
                add(c * TOUCHED_CHUNK, rows, v);
            });
        self.take_scratch();
    }

    /// The touched rows' g from `scratch` (in touched order).
    fn take_scratch(&mut self) {
        for (&i, &v) in self.touched.iter().zip(&self.scratch) {
            self.t[i as usize] = v;
        }
    }

    /// (min g, lowest row holding it) over the touched rows; (∞, usize::MAX) when none is
    /// below +∞.
    pub fn touched_min(&self) -> (f64, usize) {
        let mut best = (f64::INFINITY, usize::MAX);
        for &i in &self.touched {
            let i = i as usize;
            let v = self.g(i);
            if v < best.0 || (v == best.0 && i < best.1) {
                best = (v, i);
            }
        }
        best
    }

    /// (min, lowest row standing for it) over the open groups `k0..k0 + h.len()`, given
    /// `min` = their minimum h (from [`super::update::min_open`]).
    pub fn chunk_row(&self, k0: usize, h: &[f64], min: f64) -> (f64, usize) {
        if min == f64::INFINITY || min.is_nan() {
            return (f64::INFINITY, usize::MAX);
        }
        let closed = &self.closed[k0..k0 + h.len()];
        let mut row = u32::MAX;
        let mut blocks = h.chunks_exact(8).zip(closed.chunks_exact(8));
        let mut base = k0;
        for (hb, cb) in &mut blocks {
            let mut hit = false;
            for l in 0..8 {
                hit |= (hb[l] == min) & (cb[l] == 0);
            }
            if hit {
                for l in 0..8 {
                    if hb[l] == min && cb[l] == 0 {
                        row = row.min(self.first[base + l]);
                    }
                }
            }
            base += 8;
        }
        let rest = h.len() / 8 * 8;
        for l in rest..h.len() {
            if h[l] == min && closed[l] == 0 {
                row = row.min(self.first[k0 + l]);
            }
        }
        (min, row as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::ActiveSet;

    /// A gradient whose members of a group differ (a round's start from a backend's own g):
    /// every row reads back exactly its entry, and the rows that differ from their group's
    /// first member are touched, keeping theirs through an update.
    #[test]
    fn set_keeps_every_rows_own_entry() {
        let rep = [0u32, 0, 0, 1, 1];
        let y = [1.0; 5];
        let mut gr = Groups::new(&rep, &y, 2);
        let g = [0.5, 0.5 + 1e-16 * 3.0, 0.5, 0.25, 0.25];
        gr.set(&g, &ActiveSet::new(5));
        for (i, &gi) in g.iter().enumerate() {
            assert_eq!(gr.g(i).to_bits(), gi.to_bits(), "row {i}");
        }
        assert_eq!(gr.touched, vec![1]);
        gr.touch_rows(&[]);
        for v in gr.h.iter_mut() {
            *v *= 0.5;
        }
        gr.update_touched(0.5, 0.0, false, 0, |_, _| 0.0);
        assert_eq!(gr.g(1), 0.5 * g[1]);
        assert_eq!(gr.g(2), 0.25);
    }

    #[test]
    fn groups_split_by_label_and_track_their_first_untouched_member() {
        // Rows 0..8 over distinct rows 0..3; rows 1 and 4 share features but not labels.
        let rep = [0u32, 1, 2, 0, 1, 2, 0, 1];
        let y = [1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0];
        let mut gr = Groups::new(&rep, &y, 3);
        assert_eq!(gr.len(), 4);
        assert_eq!(gr.signed, vec![0, 1, 1 | NEGATIVE, 2]);
        assert_eq!(gr.first, vec![0, 1, 4, 2]);
        assert_eq!(gr.by_rep, vec![0, 1, 3, 4]);
        let mut g = vec![0.0; 8];
        for i in 0..8 {
            g[i] = 10.0 * rep[i] as f64 + if y[i] < 0.0 { 5.0 } else { 0.0 };
        }
        let mut a = ActiveSet::new(8);
        a.set(0, 0.5);
        a.set(4, 0.5);
        g[0] += 0.25;
        g[4] += 0.25;
        gr.set(&g, &a);
        assert_eq!(gr.first, vec![3, 1, u32::MAX, 2]);
        assert_eq!(gr.closed, vec![0, 0, 1, 0]);
        for (i, &gi) in g.iter().enumerate().take(8) {
            assert_eq!(gr.g(i), gi, "row {i}");
        }
        // g ← 0.5 g + 0.1 at row 3's diagonal: rows 0 and 3 touched, 6 stands for group 0.
        gr.touch_rows(&[3]);
        for v in gr.h.iter_mut() {
            *v *= 0.5;
        }
        gr.update_touched(0.5, 0.0, false, 1, |i, _| if i == 3 { 0.1 } else { 0.0 });
        assert_eq!(gr.first[0], 6);
        assert_eq!(gr.g(3), 0.1);
        assert_eq!(gr.g(0), 0.125);
        assert_eq!(gr.g(6), 0.0);
        assert_eq!(gr.touched_min(), (0.1, 3));
        let min = super::super::update::min_open(&gr.h, &gr.closed);
        assert_eq!(gr.chunk_row(0, &gr.h, min), (0.0, 6));
    }
}
