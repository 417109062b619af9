//! Repeated training points merged into one weighted point each.
//!
//! In the L2-SVM's simplex problem (docs/METHODS.md) a point i enters through its kernel row
//! and its diagonal term α_i²/C_i. Rows with the same features and the same label have the
//! same kernel row, so for a group G of them only the total A = Σ_{i∈G} α_i enters the
//! kernel part, and the diagonal part Σ α_i²/C_i, minimised over the splits of A, is
//! A²/Σ_{i∈G} C_i (at α_i ∝ C_i). The problem over one point per group with C_G = Σ C_i has
//! the same optimum value, and its solution, spread back over the group in proportion to the
//! C_i, is the unique optimum of the original problem (strictly convex: the diagonal). The
//! decision function Σ α_i y_i (k(x_i, x) + 1) is the same, with one support vector per group.
//!
//! KDD Cup 99's 395,216 training rows are 116,768 distinct points; at the optimum the diagonal
//! spreads α over every copy of a support vector, so an unmerged solver has to reach hundreds
//! of thousands of copies that the merged one treats as one point.

use crate::data::Dataset;
use crate::problem::distinct_rows_of;

/// The groups of equal points of a problem: one representative per group and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The first row of each group, ascending.
    pub rows: Vec<usize>,
    /// Each group's weight: the sum of its rows' weights (their count without weights).
    pub weights: Vec<f64>,
}

/// The groups of rows of `ds` with equal features (value for value) and the same label
/// `y[i]`, each row weighing `s[i]` (1 without `s`); None when every row is its own group.
pub fn merge_duplicates(ds: &Dataset, y: &[f64], s: Option<&[f64]>) -> Option<Merged> {
    let distinct = distinct_rows_of(ds);
    if distinct.rows.len() == ds.len() {
        return None;
    }
    merge_by_id(&distinct.rep, distinct.rows.len(), y, s)
}

/// [`merge_duplicates`] for rows whose equal features are already known: row i's features are
/// the `id[i]`-th of `ids` distinct ones (as [`distinct_rows_of`]'s `rep` numbers them, for
/// these rows or for a dataset they were taken from). The groups are those of
/// [`merge_duplicates`] on the rows themselves, in the same order.
pub fn merge_by_id(id: &[u32], ids: usize, y: &[f64], s: Option<&[f64]>) -> Option<Merged> {
    // Group of (distinct row, label): slot 2·id + [y > 0].
    let mut group = vec![u32::MAX; 2 * ids];
    let mut merged = Merged {
        rows: Vec::new(),
        weights: Vec::new(),
    };
    for (i, &rep) in id.iter().enumerate() {
        let slot = 2 * rep as usize + usize::from(y[i] > 0.0);
        let w = s.map_or(1.0, |s| s[i]);
        if group[slot] == u32::MAX {
            group[slot] = merged.rows.len() as u32;
            merged.rows.push(i);
            merged.weights.push(w);
        } else {
            merged.weights[group[slot] as usize] += w;
        }
    }
    (merged.rows.len() < id.len()).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Features;

    #[test]
    fn groups_equal_rows_of_one_label_and_sums_their_weights() {
        let dense = |x: &[f32], y: &[f64]| Dataset {
            features: Features::Dense {
                n_features: 2,
                values: x.to_vec(),
            },
            labels: y.to_vec(),
        };
        let x = [1.0f32, 2.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 1.0, 2.0];
        let y = [1.0, 1.0, 1.0, -1.0, -1.0];
        let ds = dense(&x, &y);
        let m = merge_duplicates(&ds, &y, None).unwrap();
        // Rows 0, 1, 3 and 4 share their features: 0 and 1 with label +1, 3 and 4 with −1.
        assert_eq!(m.rows, vec![0, 2, 3]);
        assert_eq!(m.weights, vec![2.0, 1.0, 2.0]);
        let s = [0.5, 0.25, 1.0, 2.0, 3.0];
        let w = merge_duplicates(&ds, &y, Some(&s)).unwrap();
        assert_eq!(w.weights, vec![0.75, 1.0, 5.0]);
        let distinct = dense(&x[2..6], &[1.0, 1.0]);
        assert_eq!(merge_duplicates(&distinct, &[1.0, 1.0], None), None);
    }
}
