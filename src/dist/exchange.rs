//! Rows from their owners to every rank: one broadcast per rank that owns any of the rows
//! asked for, in rank order (every rank must ask for the same rows at the same moment;
//! [`super::comm::each_rank_part`]).

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
    // The positions in `js` of each rank's rows.
    let mut of_rank: Vec<Vec<usize>> = vec![Vec::new(); comm.size()];
    for (k, &j) in js.iter().enumerate() {
        of_rank[owner(starts, j)].push(k);
    }
    let write = |buf: &mut Vec<u8>| {
        for &k in &of_rank[comm.rank()] {
            let i = js[k] - first;
            for x in extra(i) {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            OwnedRow::from(data.row(i)).to_bytes(buf);
        }
    };
    let read = |root: usize, buf: &[u8]| {
        let mut at = 0;
        for &k in &of_rank[root] {
            let mut num = [0.0; 2];
            for x in num.iter_mut() {
                let Some(w) = buf.get(at..at + 8) else {
                    return false;
                };
                *x = f64::from_le_bytes(w.try_into().expect("8 bytes"));
                at += 8;
            }
            let Some((row, used)) = OwnedRow::from_bytes(&buf[at..]) else {
                return false;
            };
            at += used;
            out[k] = Some((row, num));
        }
        true
    };
    super::comm::each_rank_part(
        comm,
        "the requested rows",
        &|r| !of_rank[r].is_empty(),
        write,
        read,
    )?;
    out.into_iter()
        .zip(js)
        .map(|(r, j)| r.ok_or_else(|| Error::Backend(format!("row {j} was not sent"))))
        .collect()
}
