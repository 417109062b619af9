//! Run under `mpirun -np P`: exercises the MPI collectives of `fwsvm::dist` and each rank's
//! slice of a LIBSVM file across real processes, printing one line per rank that
//! `tests/mpi.rs` compares with what one process computes.
//!
//! `mpi_check FILE` prints `rank R of P: sum S min V@I max V@I bcast B gather G rows FIRST+N of
//! TOTAL features D checksum C traffic M/B`; with a malformed FILE, the error every rank ends
//! with, and exit code 2.

use fwsvm::dist::comm::{Comm, Loc};
use fwsvm::dist::mpi::MpiComm;
use fwsvm::dist::slice::read_libsvm_slice;

fn main() {
    let comm = match MpiComm::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mpi_check: {e}");
            std::process::exit(1);
        }
    };
    let path = std::env::args().nth(1).unwrap_or_default();
    let code = match run(&comm, std::path::Path::new(&path)) {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(e) => {
            // One write: the ranks share stderr and must not interleave within a line.
            use std::io::Write as _;
            let line = format!("rank {}: {e}\n", comm.rank());
            let _ = std::io::stderr().write_all(line.as_bytes());
            if e.is_user_error() { 2 } else { 1 }
        }
    };
    drop(comm);
    std::process::exit(code);
}

fn run(c: &MpiComm, path: &std::path::Path) -> fwsvm::Result<String> {
    let r = c.rank();
    let mut s = [r as f64, 1.0];
    c.sum(&mut s)?;
    // Rank 0 holds the smallest value; every other rank the same largest value, at index
    // 10 − rank: the tie goes to the highest rank's (lowest) index.
    let mut lo = [Loc {
        value: if r == 0 { 2.0 } else { 5.0 },
        index: 10 - r as u64,
    }];
    let mut hi = lo;
    c.min_loc(&mut lo)?;
    c.max_loc(&mut hi)?;
    let mut b = if r + 1 == c.size() {
        b"row".to_vec()
    } else {
        Vec::new()
    };
    c.broadcast(c.size() - 1, &mut b)?;
    let g = c.gather_all(10 * r as u64)?;
    let (ds, slice) = read_libsvm_slice(path, c)?;
    // A checksum of this rank's rows: Σ label·(global index + 1) + Σ values.
    let mut sum = 0.0;
    let mut dense = vec![0.0; ds.n_features()];
    for i in 0..ds.len() {
        sum += ds.labels[i] * (slice.first + i + 1) as f64;
        dense.iter_mut().for_each(|x| *x = 0.0);
        ds.row(i).scatter_f64(&mut dense);
        sum += dense.iter().sum::<f64>();
    }
    let mut total = [sum];
    c.sum(&mut total)?;
    let t = c.traffic();
    Ok(format!(
        "rank {r} of {}: sum {} {} min {}@{} max {}@{} bcast {} gather {:?} rows {}+{} of {} features {} checksum {:.6} traffic {}/{}",
        c.size(),
        s[0],
        s[1],
        lo[0].value,
        lo[0].index,
        hi[0].value,
        hi[0].index,
        String::from_utf8_lossy(&b),
        g,
        slice.first,
        slice.rows,
        slice.total,
        ds.n_features(),
        total[0],
        t.messages,
        t.bytes
    ))
}
