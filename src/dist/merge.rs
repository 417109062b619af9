//! Repeated points merged over the ranks, as one process merges them
//! (`--duplicates merge`): one weighted point per group of rows with equal features and
//! label, the group's first row (over all ranks) standing for it, its weight the sum of its
//! rows' weights.
//!
//! Each rank groups its own rows exactly (one process's groups of its rows) and
//! names each group by a 128-bit key — two independent 64-bit hashes of its features — and its
//! label; every rank learns every rank's keys (one broadcast per rank). A group whose key a
//! lower rank also holds is that rank's group (the rows of lower ranks come first), so each
//! rank keeps the groups it holds first, in the order of their first rows: together the
//! merged points of one process, in its order. The weights travel in one `sum`, each rank
//! adding its groups' weights into the slots of the groups they join: counts of rows add
//! exactly in any order; sample weights are added rank by rank, which may round differently
//! from one process's row-by-row sum (the last bit of a group's cost).
//!
//! Two rows of different features are merged only if both 64-bit hashes of their features
//! agree, a chance of about n²/2¹²⁹ for n distinct rows (below 10⁻²⁵ for 10⁷ of them).

use super::comm::Comm;
use super::slice::RowSlice;
use crate::data::{Dataset, Row};
use crate::error::Result;
use std::collections::HashMap;

/// What merging left of this rank's rows: the rows kept (one per group this rank holds
/// first, ascending), their groups' weights over all ranks, and the merged points' slice.
pub struct MergedOverRanks {
    pub rows: Vec<usize>,
    pub weights: Vec<f64>,
    pub slice: RowSlice,
}

/// The merged points of the rows `data` (this rank's, labels `y`, weights `w`: 1 each
/// without), or None where no two rows of any ranks are equal in features and label (one
/// process then trains the rows themselves). Collective.
pub fn merge_over_ranks(
    comm: &dyn Comm,
    data: &Dataset,
    y: &[f64],
    w: Option<&[f64]>,
) -> Result<Option<MergedOverRanks>> {
    let n = data.len();
    // This rank's groups: first row and summed weight, in first-row order.
    let distinct = crate::problem::distinct_rows_of(data);
    let (first, weight) =
        match crate::duplicates::merge_by_id(&distinct.rep, distinct.rows.len(), y, w) {
            Some(g) => (g.rows, g.weights),
            None => (
                (0..n).collect(),
                (0..n).map(|i| w.map_or(1.0, |w| w[i])).collect(),
            ),
        };
    let mut keys: Vec<u64> = Vec::with_capacity(3 * first.len());
    for &i in &first {
        let r = data.row(i);
        keys.extend([row_hash_a(r), row_hash_b(r), u64::from(y[i] > 0.0)]);
    }
    let counts = comm.gather_all(first.len() as u64)?;
    let all = super::comm::all_gather(comm, &keys)?;
    let rank = comm.rank();
    let offset: Vec<usize> = counts
        .iter()
        .scan(0usize, |s, &c| {
            let o = *s;
            *s += c as usize;
            Some(o)
        })
        .collect();
    let groups: usize = counts.iter().map(|&c| c as usize).sum();
    // Each key's first slot over all ranks (lower ranks first, then first-row order).
    let mut slot_of: HashMap<[u64; 3], usize> = HashMap::with_capacity(groups);
    for (s, k) in all.chunks_exact(3).enumerate() {
        slot_of.entry([k[0], k[1], k[2]]).or_insert(s);
    }
    let rows_total: u64 = comm.gather_all(n as u64)?.iter().sum();
    if slot_of.len() as u64 == rows_total {
        return Ok(None);
    }
    let mut sums = vec![0.0; groups];
    let mut kept = Vec::new();
    let mine = offset[rank];
    for (g, k) in keys.chunks_exact(3).enumerate() {
        let s = slot_of[&[k[0], k[1], k[2]]];
        sums[s] += weight[g];
        if s == mine + g {
            kept.push(g);
        }
    }
    comm.sum(&mut sums)?;
    let kept_counts = comm.gather_all(kept.len() as u64)?;
    let slice = RowSlice {
        first: kept_counts[..rank].iter().map(|&c| c as usize).sum(),
        rows: kept.len(),
        total: kept_counts.iter().map(|&c| c as usize).sum(),
    };
    Ok(Some(MergedOverRanks {
        rows: kept.iter().map(|&g| first[g]).collect(),
        weights: kept.iter().map(|&g| sums[mine + g]).collect(),
        slice,
    }))
}

/// The features' first hash ([`crate::problem::row_hash`]).
fn row_hash_a(r: Row<'_>) -> u64 {
    crate::problem::row_hash(r)
}

/// A second hash of the features, independent of the first: each feature's index and value
/// bits folded in by a multiply–rotate mix.
fn row_hash_b(r: Row<'_>) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    let mut mix = |x: u64| {
        h = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    };
    match r {
        Row::Dense(v) => v.iter().for_each(|x| mix(x.to_bits() as u64)),
        Row::Sparse(ix, v) => {
            for (&i, x) in ix.iter().zip(v) {
                mix(((i as u64) << 32) | x.to_bits() as u64);
            }
        }
    }
    mix(0x51_7cc1_b727_220a); // the row's end, so a prefix hashes apart
    h
}
