//! Each rank's slice of the training rows, read by that rank alone.
//!
//! A plain LIBSVM file is cut into P byte ranges of equal length, each moved forward to the
//! next line start, so the slices are contiguous runs of whole lines that cover the file once;
//! rank r reads only its range. A compressed file cannot be entered in the middle: every rank
//! decompresses it, counts its lines, and parses only its share of them (line-balanced rather
//! than byte-balanced; the decompression is repeated on each rank, the parsed rows are not).
//! Rows keep the file's order, so rank r owns global rows `[first, first + rows)`. A malformed
//! line anywhere ends every rank with the file and the global line number.

use super::comm::{Comm, agree};
use crate::data::Dataset;
use crate::data::compress::{Compression, open_with_format};
use crate::data::libsvm::{Parts, parse_lines};
use crate::error::{Error, Result};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

pub use crate::comm::RowSlice;

/// Rank `rank` of `size`'s part of `n` items: `[n·r/P, n·(r+1)/P)`.
pub fn share(n: u64, rank: usize, size: usize) -> (u64, u64) {
    let (r, p) = (rank as u128, size.max(1) as u128);
    let n = n as u128;
    ((n * r / p) as u64, (n * (r + 1) / p) as u64)
}

/// The offset of the first line that starts at or after `at` in a file of `len` bytes.
fn line_start(f: &mut std::fs::File, at: u64, len: u64) -> std::io::Result<u64> {
    if at == 0 || at >= len {
        return Ok(at.min(len));
    }
    f.seek(SeekFrom::Start(at - 1))?;
    let mut r = BufReader::new(f);
    let mut pos = at - 1;
    let mut buf = [0u8; 1 << 14];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(len);
        }
        if let Some(k) = buf[..n].iter().position(|&c| c == b'\n') {
            return Ok(pos + k as u64 + 1);
        }
        pos += n as u64;
    }
}

/// This rank's lines of `path`: its parsed rows, and (for the error's line number) how many
/// lines the slice's first line is preceded by in the file when that is known already.
fn read_own_lines(path: &Path, comm: &dyn Comm) -> Result<(Parts, Option<usize>)> {
    let (_, format) = open_with_format(path)?;
    if format == Compression::Plain {
        let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
        let (a, b) = share(len, comm.rank(), comm.size());
        let start = line_start(&mut f, a, len).map_err(|e| Error::io(path, e))?;
        let end = line_start(&mut f, b, len).map_err(|e| Error::io(path, e))?;
        f.seek(SeekFrom::Start(start))
            .map_err(|e| Error::io(path, e))?;
        let mut r = BufReader::with_capacity(1 << 16, f.take(end - start));
        let parts = parse_lines(&mut r, path, format, 0..usize::MAX, start == 0)?;
        return Ok((parts, None));
    }
    // Compressed: count the lines, then parse this rank's share of them.
    let (mut reader, _) = open_with_format(path)?;
    let counted = parse_lines(&mut *reader, path, format, usize::MAX..usize::MAX, true)?;
    let (a, b) = share(counted.lines as u64, comm.rank(), comm.size());
    let (mut reader, _) = open_with_format(path)?;
    let parts = parse_lines(&mut *reader, path, format, a as usize..b as usize, true)?;
    Ok((parts, Some(0)))
}

/// Reads this rank's slice of the LIBSVM file `path` (plain or compressed); every rank must
/// call it. The dataset has the file's number of features (the largest index over all
/// ranks). Errors end every rank: the first failing rank's message, with the line counted from
/// the start of the file.
pub fn read_libsvm_slice(path: &Path, comm: &dyn Comm) -> Result<(Dataset, RowSlice)> {
    let mine = read_own_lines(path, comm);
    // Lines per rank (all of a plain slice's; compressed slices count from the file's start
    // already), so that an error names the file's line.
    let lines = comm.gather_all(match &mine {
        Ok((p, None)) => p.lines as u64,
        _ => 0,
    })?;
    let before: usize = lines[..comm.rank()].iter().map(|&l| l as usize).sum();
    let mine = mine.map_err(|e| match e {
        Error::Parse { path, line, msg } if comm.size() > 1 => Error::Parse {
            path,
            line: line + before,
            msg,
        },
        e => e,
    });
    let (parts, _) = agree(comm, mine)?;
    let rows = comm.gather_all(parts.labels.len() as u64)?;
    let features = comm.gather_all(parts.max_index as u64)?;
    let nnz = comm.gather_all(parts.nnz() as u64)?;
    let first: usize = rows[..comm.rank()].iter().map(|&r| r as usize).sum();
    let total: usize = rows.iter().map(|&r| r as usize).sum();
    if total == 0 {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: "no data rows".into(),
        });
    }
    let d = features.iter().copied().max().unwrap_or(0) as usize;
    // Every rank holds arrays over all d features: each checks d against its own machine,
    // and one refusal ends every rank (a rank whose slice stays below d would not see it).
    let fits = if d > crate::util::max_features() {
        Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: format!(
                "highest feature index {d} (on another rank's slice): {}",
                crate::util::too_many_features(d)
            ),
        })
    } else {
        Ok(())
    };
    agree(comm, fits)?;
    let slice = RowSlice {
        first,
        rows: parts.labels.len(),
        total,
    };
    // The layout the whole file gets in one process, on every rank.
    let dense = crate::data::dense_enough(nnz.iter().sum::<u64>() as usize, total, d);
    Ok((parts.into_dataset_as(d, dense), slice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::read_libsvm;
    use crate::dist::comm::on_threads;
    use std::io::Write;

    fn file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        p
    }

    fn text(rows: usize) -> String {
        let mut t = String::from("# a comment line\n");
        for i in 0..rows {
            t.push_str(&format!(
                "{} 1:{} {}:{}\n",
                if i % 3 == 0 { 1 } else { -1 },
                i as f32 * 0.5,
                2 + i % 5,
                1.0 / (1 + i) as f32
            ));
            if i % 7 == 3 {
                t.push('\n');
            }
        }
        t
    }

    /// The slices of P ranks, put back together, are the file as one process reads it.
    fn check_slices(path: &Path, size: usize) {
        let whole = read_libsvm(path).unwrap();
        let parts = on_threads(size, |c| read_libsvm_slice(path, c).unwrap());
        let mut next = 0;
        for (ds, s) in &parts {
            assert_eq!(s.first, next, "{size} ranks");
            assert_eq!(s.total, whole.len());
            assert_eq!(ds.len(), s.rows);
            assert_eq!(ds.n_features(), whole.n_features());
            assert_eq!(ds.is_dense(), whole.is_dense(), "the whole file's layout");
            for i in 0..s.rows {
                assert_eq!(ds.labels[i], whole.labels[s.first + i]);
                let d = whole.n_features();
                let (mut a, mut b) = (vec![0.0; d], vec![0.0; d]);
                ds.row(i).scatter_f64(&mut a);
                whole.row(s.first + i).scatter_f64(&mut b);
                assert_eq!(a, b, "row {}", s.first + i);
            }
            next += s.rows;
        }
        assert_eq!(next, whole.len());
    }

    #[test]
    fn slices_cover_the_file_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let plain = file(dir.path(), "d.txt", &text(101));
        for size in [1, 2, 3, 4, 7] {
            check_slices(&plain, size);
        }
        // Dense rows first, then rows with one feature: dense as a whole, not in its second
        // half — each slice takes the layout of the whole file.
        let skew: String = (0..40)
            .map(|i| {
                if i < 20 {
                    format!("1 1:1 2:2 3:3 4:4 5:5 6:{i}\n")
                } else {
                    format!("-1 {}:1\n", 1 + i % 6)
                }
            })
            .collect();
        let skew = file(dir.path(), "s.txt", &skew);
        assert!(read_libsvm(&skew).unwrap().is_dense());
        for size in [2, 3] {
            check_slices(&skew, size);
        }
        // More ranks than lines: some slices are empty.
        let tiny = file(dir.path(), "t.txt", &text(2));
        check_slices(&tiny, 6);
        // Compressed: line-balanced slices of the decompressed text.
        let gz = dir.path().join("d.txt.gz");
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(text(57).as_bytes()).unwrap();
        e.finish().unwrap();
        for size in [1, 2, 5] {
            check_slices(&gz, size);
        }
    }

    #[test]
    fn a_bad_line_in_one_slice_ends_every_rank_with_its_file_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = text(80);
        let bad_line = t.lines().count() * 3 / 4; // in the last rank's slice for 2 ranks
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[bad_line] = "1 3:x".into();
        t = lines.join("\n") + "\n";
        let p = file(dir.path(), "bad.txt", &t);
        let whole = read_libsvm(&p).unwrap_err().to_string();
        assert!(whole.contains(&format!(":{}:", bad_line + 1)), "{whole}");
        for size in [2, 3] {
            let errs = on_threads(size, |c| read_libsvm_slice(&p, c).unwrap_err());
            for e in errs {
                assert!(e.is_user_error());
                assert!(
                    e.to_string()
                        .contains(&format!("bad.txt:{}:", bad_line + 1)),
                    "{size} ranks: {e}"
                );
            }
        }
    }
}
