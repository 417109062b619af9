//! Rows from their owners to every rank: one broadcast per rank that owns any of the rows
//! asked for, in rank order (every rank must ask for the same rows at the same moment).

use super::comm::Comm;
use crate::data::{Dataset, OwnedRow};
use crate::error::{Error, Result};

/// The rank that owns global row `j`, given every rank's first row and m at the end.
pub fn owner(starts: &[usize], j: usize) -> usize {
    // Empty ranks repeat their successor's start: the last rank starting at or before j.
    starts.partition_point(|&s| s <= j) - 1
}

/// The rows `js` (global indices below m, no repeats), each with two numbers its owner attaches
/// (`extra(local index)`: a label and a cost, say), in the order of `js`. `data` holds this
/// rank's rows, global `first..`; `starts` every rank's first row and m at the end.
pub fn exchange_rows(
    comm: &dyn Comm,
    data: &Dataset,
    first: usize,
    starts: &[usize],
    js: &[usize],
    extra: &dyn Fn(usize) -> [f64; 2],
) -> Result<Vec<(OwnedRow, [f64; 2])>> {
    let m = *starts.last().unwrap_or(&0);
    if let Some(&j) = js.iter().find(|&&j| j >= m) {
        return Err(Error::Backend(format!("point {j} beyond the {m} rows")));
    }
    let mut out: Vec<Option<(OwnedRow, [f64; 2])>> = vec![None; js.len()];
    let mut buf = Vec::new();
    for root in 0..comm.size() {
        let mine: Vec<usize> = (0..js.len())
            .filter(|&k| owner(starts, js[k]) == root)
            .collect();
        if mine.is_empty() {
            continue;
        }
        buf.clear();
        if root == comm.rank() {
            for &k in &mine {
                let i = js[k] - first;
                for x in extra(i) {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
                OwnedRow::from(data.row(i)).to_bytes(&mut buf);
            }
        }
        comm.broadcast(root, &mut buf)?;
        let mut at = 0;
        for &k in &mine {
            let bad = || Error::Backend(format!("row {} arrived damaged", js[k]));
            let mut num = [0.0; 2];
            for x in num.iter_mut() {
                let mut w = [0u8; 8];
                w.copy_from_slice(buf.get(at..at + 8).ok_or_else(bad)?);
                *x = f64::from_le_bytes(w);
                at += 8;
            }
            let (row, used) = OwnedRow::from_bytes(&buf[at..]).ok_or_else(bad)?;
            at += used;
            out[k] = Some((row, num));
        }
    }
    out.into_iter()
        .zip(js)
        .map(|(r, j)| r.ok_or_else(|| Error::Backend(format!("row {j} was not sent"))))
        .collect()
}
