//! Synthetic datasets: the checkerboard of the Core Vector Machine papers' scale tests (Tsang,
//! Kwok and Cheung, 2005, as cited by Vishwanathan, Smola et al., *SimpleSVM*, 2003): points
//! uniform on [0, K)², labelled +1 where ⌊x⌋ + ⌊y⌋ is even and −1 where it is odd (K = 4: a
//! 4 × 4 board, two classes of equal size in expectation). Seeded: the same seed gives the
//! same rows on every machine.

use crate::rng::SplitMix64;
use std::io::{self, Write};

/// One checkerboard point (label, x, y), as the f32 values a reader keeps (the label is that
/// of the stored point).
pub fn checkerboard_point(r: &mut SplitMix64, board: u32) -> (i8, f32, f32) {
    let k = board as f32;
    let below_k = f32::from_bits(k.to_bits() - 1);
    let mut coord = || ((r.next_f64() * board as f64) as f32).min(below_k);
    let (x, y) = (coord(), coord());
    let even = (x.floor() as u64 + y.floor() as u64).is_multiple_of(2);
    (if even { 1 } else { -1 }, x, y)
}

/// Writes `rows` checkerboard points in LIBSVM format (`+1 1:x 2:y`, 7 significant digits),
/// each label flipped with probability `noise` (label noise: a non-separable problem whose
/// support grows with m). The flips draw from a stream of their own, so the points are those
/// of `noise` = 0 whatever the noise.
pub fn write_checkerboard<W: Write>(
    w: &mut W,
    rows: u64,
    board: u32,
    seed: u64,
    noise: f64,
) -> io::Result<()> {
    let mut r = SplitMix64::new(seed ^ 0xC4EC_8B0A_12D5_0001);
    let mut flips = SplitMix64::new(seed ^ 0x5EED_F11B_0000_0002);
    for _ in 0..rows {
        let (mut label, x, y) = checkerboard_point(&mut r, board);
        if noise > 0.0 && flips.next_f64() < noise {
            label = -label;
        }
        // Rust prints the shortest text that reads back as the same f32.
        writeln!(w, "{} 1:{x} 2:{y}", if label > 0 { "+1" } else { "-1" })?;
    }
    Ok(())
}

/// `rows` checkerboard points in memory (dense, 2 features): the rows
/// [`write_checkerboard`] writes with the same arguments.
pub fn checkerboard(rows: usize, board: u32, seed: u64) -> crate::data::Dataset {
    let mut r = SplitMix64::new(seed ^ 0xC4EC_8B0A_12D5_0001);
    let mut values = Vec::with_capacity(2 * rows);
    let mut labels = Vec::with_capacity(rows);
    for _ in 0..rows {
        let (label, x, y) = checkerboard_point(&mut r, board);
        values.push(x);
        values.push(y);
        labels.push(label as f64);
    }
    let indptr = (0..=rows).map(|i| 2 * i).collect();
    let indices = (0..rows).flat_map(|_| [0u32, 1]).collect();
    crate::data::Dataset::from_csr(2, indptr, indices, values, labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_rows_equal_the_written_file() {
        let ds = checkerboard(50, 4, 3);
        let mut text = Vec::new();
        write_checkerboard(&mut text, 50, 4, 3, 0.0).unwrap();
        let text = String::from_utf8(text).unwrap();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let x: f32 = f[1][2..].parse().unwrap();
            let y: f32 = f[2][2..].parse().unwrap();
            assert_eq!(ds.labels[i], if f[0] == "+1" { 1.0 } else { -1.0 });
            match ds.row(i) {
                crate::data::Row::Dense(v) => assert_eq!(v, &[x, y][..], "row {i}"),
                other => panic!("row {i} is not dense: {other:?}"),
            }
        }
    }

    #[test]
    fn labels_follow_the_board_and_the_seed() {
        let mut a = Vec::new();
        write_checkerboard(&mut a, 2000, 4, 7, 0.0).unwrap();
        let mut b = Vec::new();
        write_checkerboard(&mut b, 2000, 4, 7, 0.0).unwrap();
        let mut c = Vec::new();
        write_checkerboard(&mut c, 2000, 4, 8, 0.0).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let text = String::from_utf8(a).unwrap();
        let mut pos = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let x: f32 = f[1].strip_prefix("1:").unwrap().parse().unwrap();
            let y: f32 = f[2].strip_prefix("2:").unwrap().parse().unwrap();
            assert!((0.0..4.0).contains(&x) && (0.0..4.0).contains(&y), "{line}");
            let even = (x.floor() as u32 + y.floor() as u32).is_multiple_of(2);
            assert_eq!(f[0] == "+1", even, "{line}");
            pos += (f[0] == "+1") as usize;
        }
        assert_eq!(text.lines().count(), 2000);
        // Balanced to within 4 standard deviations (σ = √(2000/4) ≈ 22).
        assert!((pos as i64 - 1000).abs() < 90, "{pos} positives");
    }

    #[test]
    fn noise_flips_labels_of_the_same_points() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_checkerboard(&mut a, 20_000, 4, 5, 0.0).unwrap();
        write_checkerboard(&mut b, 20_000, 4, 5, 0.2).unwrap();
        let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        let mut flipped = 0;
        for (la, lb) in a.lines().zip(b.lines()) {
            let (ya, xa) = la.split_once(' ').unwrap();
            let (yb, xb) = lb.split_once(' ').unwrap();
            assert_eq!(xa, xb, "the points must not move");
            flipped += usize::from(ya != yb);
        }
        // 20,000 × 0.2 = 4,000 flips expected (σ ≈ 57).
        assert!((3700..4300).contains(&flipped), "{flipped} labels flipped");
    }
}
