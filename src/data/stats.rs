//! The statistics a dataset's row layout is chosen from.

/// What the CPU backend's row layout is chosen from: its rows, its stored values, whether
/// every stored value is 1 and which features take only the values 0 and 1. A rank of a
/// distributed run holds a part of the rows and lays it out as one process lays out all of
/// them (`Layout::new_as` with the whole set's statistics), so that every dot product is
/// summed as one process sums it.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutStats {
    /// Rows.
    pub rows: usize,
    /// Stored values (CSR) or rows × features (dense).
    pub nnz: usize,
    /// Every stored value is 1 (CSR rows only).
    pub all_ones: bool,
    /// Per feature: every value it takes is 0 or 1.
    pub zero_one: Vec<bool>,
}

impl LayoutStats {
    /// The statistics of `ds`'s rows.
    pub fn of(ds: &super::Dataset) -> LayoutStats {
        let d = ds.n_features();
        let mut zero_one = vec![true; d];
        let (nnz, all_ones) = match &ds.features {
            super::Features::Dense { values, .. } => {
                for row in values.chunks_exact(d.max(1)) {
                    for (z, &v) in zero_one.iter_mut().zip(row) {
                        *z &= v == 0.0 || v == 1.0;
                    }
                }
                (values.len(), false)
            }
            super::Features::Sparse {
                indices, values, ..
            } => {
                for (&f, &v) in indices.iter().zip(values.iter()) {
                    zero_one[f as usize] &= v == 0.0 || v == 1.0;
                }
                (values.len(), values.iter().all(|&v| v == 1.0))
            }
        };
        LayoutStats {
            rows: ds.len(),
            nnz,
            all_ones,
            zero_one,
        }
    }
}
