//! The touched rows' part of a batched update over deduplicated bit rows, computed in place.
//!
//! With deduplicated rows the update adds each column to the groups' h in a pass over the
//! distinct rows, and to the touched rows' own g one row at a time ([`Groups`]); the second
//! reads each touched row's entry of every column at a scattered position (its distinct row),
//! a cache miss per entry once the columns outgrow the cache (w8a: about ten thousand touched
//! rows, fifty columns an iteration). For bit rows under the RBF kernel an entry is a table
//! lookup by Hamming distance ([`RbfTable`](crate::backend::simd::RbfTable)), so the touched
//! rows keep a blocked copy of their bits and compute their entries eight at a time — the
//! numbers the cached columns hold, added in the same order, so g is the same bit for bit.
//!
//! [`Groups`]: crate::backend::groups::Groups

use super::{CpuBackend, Distinct};
use crate::backend::groups::TOUCHED_CHUNK;
use crate::backend::simd::{Elem, Layout, binary_rbf_entries_against, push_bit_row};

/// The touched rows' bits, blocked as [`Layout::Binary`] holds them, in touched order.
#[derive(Default)]
pub(super) struct TouchedBits {
    layout: Option<Layout<'static>>,
    /// Rows copied, and the groups' reset count they were copied under.
    rows: usize,
    resets: u64,
}

impl<T: Elem> CpuBackend<'_, T> {
    /// [`Groups::update_touched_many`](crate::backend::groups::Groups::update_touched_many)
    /// of `cols` with the entries computed from the rows' bits; false (nothing done) unless
    /// the rows are deduplicated bit rows under the RBF kernel with f32 entries and no
    /// guests.
    pub(super) fn update_touched_in_place(&mut self, scale: f64, cols: &[(usize, f64)]) -> bool {
        let (
            Some(Distinct {
                rep, groups: gr, ..
            }),
            Some(table),
            Layout::Binary { words, .. },
        ) = (
            self.distinct.as_mut(),
            self.rbf_table.as_ref(),
            &self.layout,
        )
        else {
            return false;
        };
        if !T::SINGLE || !self.guests.is_empty() || *words > 6 {
            return false;
        }
        // Bring the copy of the touched rows' bits up to date (rows are only appended
        // between resets).
        let (touched, resets) = gr.touched();
        let tb = &mut self.touched_bits;
        if tb.resets != resets || tb.rows > touched.len() || tb.layout.is_none() {
            tb.layout = Some(Layout::Binary {
                words: *words,
                bits: Default::default(),
            });
            (tb.rows, tb.resets) = (0, resets);
        }
        if let Some(Layout::Binary { bits, .. }) = tb.layout.as_mut() {
            for (k, &i) in touched.iter().enumerate().skip(tb.rows) {
                push_bit_row(&self.layout, rep[i as usize] as usize, bits, k);
            }
        }
        tb.rows = touched.len();
        let (prob, layout) = (self.prob, &self.layout);
        let rows = tb.layout.as_ref().expect("set above");
        gr.update_touched_chunks(scale, |k0, chunk, v| {
            let n = chunk.len();
            let ones = [1.0f64; TOUCHED_CHUNK];
            let (mut e, mut y) = ([0.0f32; TOUCHED_CHUNK], [0.0f64; TOUCHED_CHUNK]);
            for (yk, &i) in y.iter_mut().zip(chunk) {
                *yk = prob.y[i as usize];
            }
            for &(j, c) in cols {
                let q = rep[j] as usize;
                binary_rbf_entries_against(
                    layout,
                    q,
                    rows,
                    table,
                    &ones[..n],
                    1.0,
                    k0,
                    &mut e[..n],
                );
                let (yj, inv_c, j32) = (prob.y[j], prob.inv_c(j), j as u32);
                // y_i y_j k̃ + δ_ij/C_j: adding 0 off the diagonal changes nothing (the
                // entry is never zero), so the loop has no branch.
                for (((o, &i), &ek), &yi) in v.iter_mut().zip(chunk).zip(&e[..n]).zip(&y[..n]) {
                    let diag = if i == j32 { inv_c } else { 0.0 };
                    *o += c * (yi * yj * ek as f64 + diag);
                }
            }
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::ActiveSet;
    use crate::backend::cpu::Precision;
    use crate::backend::{Backend, Columns, CpuConfig, update_by_pairs};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::problem::Problem;
    use crate::rng::SplitMix64;

    /// Bit rows (130 features: three words) drawn from 60 patterns, enough of them to be
    /// deduplicated.
    fn repeated_bit_rows(m: usize) -> Dataset {
        let mut r = SplitMix64::new(3);
        let patterns: Vec<Vec<u32>> = (0..60)
            .map(|_| (0..130u32).filter(|_| r.next_f64() < 0.08).collect())
            .collect();
        let (mut ip, mut ix) = (vec![0usize], Vec::new());
        let mut y = Vec::new();
        for _ in 0..m {
            ix.extend_from_slice(&patterns[r.below(60)]);
            ip.push(ix.len());
            y.push(if r.next_f64() < 0.5 { 1.0 } else { -1.0 });
        }
        let vs = vec![1.0f32; ix.len()];
        Dataset::from_csr(130, ip, ix, vs, y)
    }

    /// The touched rows' entries computed from their bits give g bit for bit as the columns
    /// read back, applied pair by pair, do — with a column of a touched row (its 1/C
    /// diagonal), over several updates that touch new rows.
    #[test]
    fn touched_rows_computed_in_place_match_updates_by_pairs() {
        let ds = repeated_bit_rows(5000);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.3 }, 2.0).unwrap();
        let cfg = CpuConfig {
            cache_bytes: 1 << 20,
            precision: Some(Precision::F32),
            ..CpuConfig::default()
        };
        let (mut a, mut b) = (
            CpuBackend::<f32>::new(&prob, cfg),
            CpuBackend::<f32>::new(&prob, cfg),
        );
        assert!(
            a.distinct.is_some() && a.rbf_table.is_some(),
            "the path under test applies"
        );
        let mut alpha = ActiveSet::new(prob.len());
        for (k, i) in [5usize, 77, 1200, 4999].into_iter().enumerate() {
            alpha.set(i, 0.1 * (k + 1) as f64);
        }
        a.set_alpha(&alpha).unwrap();
        b.set_alpha(&alpha).unwrap();
        let idx: Vec<usize> = (0..prob.len()).collect();
        let rounds: [&[(usize, f64)]; 3] = [
            &[(5, 0.25), (10, -0.5), (11, 0.125), (77, 0.3)],
            &[(400, 0.5), (5, -0.2), (2500, 0.7), (12, 0.01), (13, -0.02)],
            &[
                (4999, -0.1),
                (600, 0.3),
                (601, 0.2),
                (5, 0.05),
                (10, 0.4),
                (1, -0.3),
            ],
        ];
        for (r, cols) in rounds.into_iter().enumerate() {
            a.update_many(1.0, cols).unwrap();
            update_by_pairs(&mut b, 1.0, cols).unwrap();
            let (mut ga, mut gb) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
            a.gather(&idx, &mut ga).unwrap();
            b.gather(&idx, &mut gb).unwrap();
            for i in 0..prob.len() {
                assert_eq!(ga[i].to_bits(), gb[i].to_bits(), "round {r}, row {i}");
            }
            assert_eq!(
                a.touched_bits.rows,
                a.distinct.as_ref().unwrap().groups.touched().0.len()
            );
        }
    }
}
