//! RBF columns of bit rows ([`Layout::Binary`]: a9a, w8a) by table lookup: for 0/1 rows the
//! squared distance ‖x_i − x_j‖² is the Hamming distance popcount(x_i ⊕ x_j), so every entry
//! is one of 64·words + 1 values, computed once ([`RbfTable`]). AVX-512 computes the distances
//! of eight rows per instruction (VPOPCNTQ) and looks them up by a two-register permutation
//! (distances below 32) or a gather; a portable loop does the rest.

use super::{Aligned, LANES, Layout, MAX_BINARY_WORDS};

/// The RBF kernel on [`Layout::Binary`] rows by lookup: for 0/1 rows the squared distance is
/// a Hamming distance, ‖x_i − x_j‖² = popcount(x_i ⊕ x_j), so every entry is one of the
/// values e^{−γd} + 1, d = 0..=64·words, each rounded once from f64 to f32 here (the
/// correctly rounded f32 of the exact k + 1; the f32 exponential is within about an ulp).
pub struct RbfTable {
    /// e^{−γd} + 1 for d = 0..=64·words.
    pub values: Vec<f32>,
    /// The most ones in a row of the layout: two rows are at most twice this apart.
    pub max_ones: u32,
}

impl RbfTable {
    /// The table for `layout`'s rows under the RBF kernel of `gamma` (None unless bit rows).
    pub fn new(gamma: f64, layout: &Layout<'_>) -> Option<RbfTable> {
        let Layout::Binary { words, bits } = layout else {
            return None;
        };
        let mut max_ones = 0;
        for blk in bits.chunks_exact(words * LANES) {
            for l in 0..LANES {
                let ones: u32 = (0..*words).map(|w| blk[w * LANES + l].count_ones()).sum();
                max_ones = max_ones.max(ones);
            }
        }
        let values = (0..=64 * words)
            .map(|d| ((-gamma * d as f64).exp() + 1.0) as f32)
            .collect();
        Some(RbfTable { values, max_ones })
    }
}

/// out_i = ±values[popcount(row_i ⊕ q)] (the sign of y_i y_j) for the blocked bit rows of
/// `W` words ([`Layout::Binary`]), `bits` holding ⌈out.len() / LANES⌉ blocks; `q_ones` is
/// the query's number of ones.
#[inline(always)]
fn hamming_lookup<const W: usize>(
    bits: &[u64],
    qb: &[u64],
    q_ones: u32,
    table: &RbfTable,
    y: &[f64],
    yj: f64,
    out: &mut [f32],
) {
    let q: [u64; W] = std::array::from_fn(|w| qb[w]);
    let values = &table.values[..=64 * W];
    let n = out.len();
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512vpopcntdq")
    {
        let blocks = n / LANES;
        let bits = &bits[..blocks * W * LANES];
        // Every distance is at most the two rows' ones.
        done = if table.max_ones + q_ones < 32 {
            // SAFETY: the CPU has the features; the slices are as the function asks.
            unsafe { hamming_pairs_avx512::<W, true>(bits, &q, values, y, yj, out) }
        } else {
            // SAFETY: as above.
            unsafe { hamming_pairs_avx512::<W, false>(bits, &q, values, y, yj, out) }
        };
    }
    let full = n / LANES;
    #[cfg(target_arch = "x86_64")]
    if done < full * LANES
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
    {
        // SAFETY: the CPU has the features.
        unsafe { hamming_blocks_avx2::<W>(bits, &q, values, y, yj, out, done / LANES, full) };
        done = full * LANES;
    }
    hamming_blocks::<W>(bits, &q, values, y, yj, out, done / LANES, full);
    if n > full * LANES {
        let (mut o, mut yb) = ([0.0f32; LANES], [1.0f64; LANES]);
        let k = n - full * LANES;
        yb[..k].copy_from_slice(&y[full * LANES..]);
        let blk = &bits[full * W * LANES..(full + 1) * W * LANES];
        hamming_block::<W>(blk, &q, values, &yb, yj, &mut o);
        out[full * LANES..].copy_from_slice(&o[..k]);
    }
}

/// The Hamming distances of one block's LANES rows to `q` (AVX-512 VPOPCNTQ).
///
/// # Safety
/// The CPU has AVX-512F and VPOPCNTDQ (the caller's dispatch checked it); `bits` points to a
/// block of `W`·LANES readable words.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[inline]
unsafe fn hamming_distances<const W: usize>(
    bits: *const u64,
    q: &[std::arch::x86_64::__m512i; W],
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let mut d = _mm512_setzero_si512();
    for (w, qw) in q.iter().enumerate() {
        // SAFETY: the caller's block has W·LANES words.
        let x = unsafe { _mm512_loadu_si512(bits.add(w * LANES).cast()) };
        d = _mm512_add_epi64(d, _mm512_popcnt_epi64(_mm512_xor_si512(x, *qw)));
    }
    d
}

/// The blocks of [`hamming_lookup`] in pairs (16 rows); returns the rows done (a multiple of
/// 2·LANES). The table's first 64 values sit in four registers: with `NARROW` (every distance
/// below 32, known from the rows' ones) one two-register permutation looks 16 entries up;
/// otherwise two permutations and a blend where every distance of the pair is below 64 (most
/// rows of sparse bit data: w8a's have 9 ones at the median), a gather where one is not.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ and VPOPCNTDQ (the caller's dispatch checked it); `bits`
/// holds `W` words per row for every block asked, and the table covers every distance up to
/// 64·`W`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq")]
unsafe fn hamming_pairs_avx512<const W: usize, const NARROW: bool>(
    bits: &[u64],
    q: &[u64; W],
    values: &[f32],
    y: &[f64],
    yj: f64,
    out: &mut [f32],
) -> usize {
    use std::arch::x86_64::*;
    let pairs = bits.len() / (2 * W * LANES);
    assert!(
        values.len() > 64 * W
            && values.len() >= 64
            && y.len() >= pairs * 2 * LANES
            && out.len() >= pairs * 2 * LANES
    );
    let qv: [__m512i; W] = std::array::from_fn(|w| _mm512_set1_epi64(q[w] as i64));
    // SAFETY: values has at least 64 entries.
    let t: [__m512; 4] =
        std::array::from_fn(|k| unsafe { _mm512_loadu_ps(values.as_ptr().add(16 * k)) });
    let (c32, c64) = (_mm512_set1_epi32(32), _mm512_set1_epi32(64));
    let yjv = _mm512_set1_ps(yj as f32);
    for p in 0..pairs {
        let r = 2 * p * LANES;
        // SAFETY: rows r..r + 16 are inside bits, y and out (asserted above); every distance
        // is at most 64·W, inside values.
        unsafe {
            let d0 = hamming_distances::<W>(bits.as_ptr().add(r * W), &qv);
            let d1 = hamming_distances::<W>(bits.as_ptr().add((r + LANES) * W), &qv);
            let idx = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvtepi64_epi32(d0)),
                _mm512_cvtepi64_epi32(d1),
            );
            let k = if NARROW {
                _mm512_permutex2var_ps(t[0], idx, t[1])
            } else if _mm512_cmpge_epi32_mask(idx, c64) == 0 {
                let lo = _mm512_permutex2var_ps(t[0], idx, t[1]);
                let hi = _mm512_permutex2var_ps(t[2], idx, t[3]);
                _mm512_mask_blend_ps(_mm512_cmpge_epi32_mask(idx, c32), lo, hi)
            } else {
                _mm512_i32gather_ps::<4>(idx, values.as_ptr())
            };
            let yi = _mm512_insertf32x8::<1>(
                _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_loadu_pd(y.as_ptr().add(r)))),
                _mm512_cvtpd_ps(_mm512_loadu_pd(y.as_ptr().add(r + LANES))),
            );
            _mm512_storeu_ps(
                out.as_mut_ptr().add(r),
                _mm512_mul_ps(k, _mm512_mul_ps(yi, yjv)),
            );
        }
    }
    pairs * 2 * LANES
}

/// Blocks `from..to` of [`hamming_lookup`] by [`hamming_block`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hamming_blocks<const W: usize>(
    bits: &[u64],
    q: &[u64; W],
    values: &[f32],
    y: &[f64],
    yj: f64,
    out: &mut [f32],
    from: usize,
    to: usize,
) {
    for b in from..to {
        let (o, yb) = (
            &mut out[b * LANES..(b + 1) * LANES],
            &y[b * LANES..(b + 1) * LANES],
        );
        hamming_block::<W>(
            &bits[b * W * LANES..(b + 1) * W * LANES],
            q,
            values,
            yb,
            yj,
            o,
        );
    }
}

/// Blocks `from..to` of [`hamming_lookup`] in AVX2: the distances of a block's eight rows by
/// nibble lookups (VPSHUFB), summed per row by VPSADBW; the table's first 32 values in four
/// registers, looked up by VPERMPS and two blends where every distance of the block is below
/// 32 (a9a's rows have 14 ones), by a gather where one is not.
///
/// # Safety
/// The CPU has AVX2 and FMA (the caller's dispatch checked it); `bits` and the table as for
/// [`hamming_pairs_avx512`], blocks `from..to` within `bits`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn hamming_blocks_avx2<const W: usize>(
    bits: &[u64],
    q: &[u64; W],
    values: &[f32],
    y: &[f64],
    yj: f64,
    out: &mut [f32],
    from: usize,
    to: usize,
) {
    use super::avx2::popcnt_bytes;
    use std::arch::x86_64::*;
    assert!(
        values.len() > 64 * W
            && values.len() >= 32
            && bits.len() >= to * W * LANES
            && y.len() >= to * LANES
            && out.len() >= to * LANES
    );
    let qv: [__m256i; W] = std::array::from_fn(|w| _mm256_set1_epi64x(q[w] as i64));
    // SAFETY: values has at least 32 entries.
    let t: [__m256; 4] =
        std::array::from_fn(|k| unsafe { _mm256_loadu_ps(values.as_ptr().add(8 * k)) });
    let (c31, pick) = (
        _mm256_set1_epi32(31),
        _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
    );
    let yjv = _mm256_set1_ps(yj as f32);
    // Popcounts of (x ⊕ q) per byte, for four rows, summed over the words.
    let counts = |p: *const u64, half: usize| -> __m256i {
        let mut c = _mm256_setzero_si256();
        for (w, qw) in qv.iter().enumerate() {
            // SAFETY: the block has W·LANES words (asserted above).
            let x = unsafe { _mm256_loadu_si256(p.add(w * LANES + 4 * half).cast()) };
            c = _mm256_add_epi8(c, popcnt_bytes(_mm256_xor_si256(x, *qw)));
        }
        _mm256_sad_epu8(c, _mm256_setzero_si256())
    };
    for b in from..to {
        // SAFETY: block b < to lies in bits, y and out (asserted above); every distance is at
        // most 64·W, inside values.
        unsafe {
            let p = bits.as_ptr().add(b * W * LANES);
            let d0 = _mm256_permutevar8x32_epi32(counts(p, 0), pick);
            let d1 = _mm256_permutevar8x32_epi32(counts(p, 1), pick);
            let d = _mm256_blend_epi32::<0xf0>(d0, d1);
            let k = if _mm256_movemask_epi8(_mm256_cmpgt_epi32(d, c31)) == 0 {
                let m3 = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(d));
                let m4 = _mm256_castsi256_ps(_mm256_slli_epi32::<27>(d));
                let lo = _mm256_blendv_ps(
                    _mm256_permutevar8x32_ps(t[0], d),
                    _mm256_permutevar8x32_ps(t[1], d),
                    m3,
                );
                let hi = _mm256_blendv_ps(
                    _mm256_permutevar8x32_ps(t[2], d),
                    _mm256_permutevar8x32_ps(t[3], d),
                    m3,
                );
                _mm256_blendv_ps(lo, hi, m4)
            } else {
                _mm256_i32gather_ps::<4>(values.as_ptr(), d)
            };
            let r = b * LANES;
            let yi = _mm256_set_m128(
                _mm256_cvtpd_ps(_mm256_loadu_pd(y.as_ptr().add(r + 4))),
                _mm256_cvtpd_ps(_mm256_loadu_pd(y.as_ptr().add(r))),
            );
            _mm256_storeu_ps(
                out.as_mut_ptr().add(r),
                _mm256_mul_ps(k, _mm256_mul_ps(yi, yjv)),
            );
        }
    }
}

/// One block of [`hamming_lookup`], portably.
#[inline(always)]
fn hamming_block<const W: usize>(
    blk: &[u64],
    q: &[u64; W],
    values: &[f32],
    y: &[f64],
    yj: f64,
    o: &mut [f32],
) {
    let mut d = [0u64; LANES];
    for w in 0..W {
        for l in 0..LANES {
            d[l] += (blk[w * LANES + l] ^ q[w]).count_ones() as u64;
        }
    }
    for l in 0..LANES {
        // d ≤ 64·W: in the table.
        let k = values[(d[l] as usize).min(64 * W)];
        o[l] = k * (y[l] * yj) as f32;
    }
}

/// The bits of row `j` of [`Layout::Binary`] rows into `qb` (`words` entries).
#[inline(always)]
fn row_bits(bits: &[u64], words: usize, j: usize, qb: &mut [u64]) {
    let (b, l) = (j / LANES, j % LANES);
    for (w, q) in qb[..words].iter_mut().enumerate() {
        *q = bits[(b * words + w) * LANES + l];
    }
}

/// [`hamming_lookup`] for the unrolled widths (1 to 6 words); false (nothing written) for
/// wider rows.
#[inline(always)]
pub(super) fn hamming_any(
    bits: &[u64],
    words: usize,
    qb: &[u64],
    table: &RbfTable,
    y: &[f64],
    yj: f64,
    out: &mut [f32],
) -> bool {
    let ones = qb[..words].iter().map(|w| w.count_ones()).sum();
    match words {
        1 => hamming_lookup::<1>(bits, qb, ones, table, y, yj, out),
        2 => hamming_lookup::<2>(bits, qb, ones, table, y, yj, out),
        3 => hamming_lookup::<3>(bits, qb, ones, table, y, yj, out),
        4 => hamming_lookup::<4>(bits, qb, ones, table, y, yj, out),
        5 => hamming_lookup::<5>(bits, qb, ones, table, y, yj, out),
        6 => hamming_lookup::<6>(bits, qb, ones, table, y, yj, out),
        _ => return false,
    }
    true
}

/// Q[r0..r0 + out.len(), j] without the 1/C diagonal, in f32, for [`Layout::Binary`] rows
/// under the RBF kernel by `table`: the entries a cached column holds, computed where they
/// are used. False (nothing written) for other layouts and widths. `r0` must be a multiple
/// of LANES; `y` holds every row's label.
pub fn binary_rbf_entries(
    layout: &Layout<'_>,
    table: &RbfTable,
    y: &[f64],
    j: usize,
    r0: usize,
    out: &mut [f32],
) -> bool {
    let ys = &y[r0..r0 + out.len()];
    binary_rbf_entries_against(layout, j, layout, table, ys, y[j], r0, out)
}

/// [`binary_rbf_entries`] for rows r0..r0 + out.len() of `rows` against row j of `of`, both
/// bit rows of the same width (a selection of `of`'s rows, say): `y` holds those rows'
/// labels (out.len() of them) and `yj` the query's. `r0` must be a multiple of LANES.
#[allow(clippy::too_many_arguments)]
pub fn binary_rbf_entries_against(
    of: &Layout<'_>,
    j: usize,
    rows: &Layout<'_>,
    table: &RbfTable,
    y: &[f64],
    yj: f64,
    r0: usize,
    out: &mut [f32],
) -> bool {
    let (Layout::Binary { words, bits: qbits }, Layout::Binary { words: rw, bits }) = (of, rows)
    else {
        return false;
    };
    if words != rw {
        return false;
    }
    let (words, n) = (*words, out.len());
    let mut qb = [0u64; MAX_BINARY_WORDS];
    row_bits(qbits, words, j, &mut qb);
    let (b0, nb) = (r0 / LANES, n.div_ceil(LANES));
    let rows = &bits[b0 * words * LANES..(b0 + nb) * words * LANES];
    hamming_any(rows, words, &qb, table, y, yj, out)
}

/// Appends row j of the bit rows `of` to the blocked bit rows `bits` of `len` rows (`words`
/// per row, as [`Layout::Binary`] holds them), growing it by a block when full.
pub fn push_bit_row(of: &Layout<'_>, j: usize, bits: &mut Aligned<u64>, len: usize) -> bool {
    let Layout::Binary { words, bits: src } = of else {
        return false;
    };
    let words = *words;
    let (b, l) = (len / LANES, len % LANES);
    if l == 0 {
        bits.resize_zeroed((b + 1) * words * LANES);
    }
    let (sb, sl) = (j / LANES, j % LANES);
    for w in 0..words {
        bits[(b * words + w) * LANES + l] = src[(sb * words + w) * LANES + sl];
    }
    true
}

/// Q_ij without the 1/C diagonal, in f32, for [`Layout::Binary`] rows by `table`: the entry
/// [`binary_rbf_entries`] gives (None for other layouts).
pub fn binary_rbf_entry(
    layout: &Layout<'_>,
    table: &RbfTable,
    y: &[f64],
    i: usize,
    j: usize,
) -> Option<f32> {
    let Layout::Binary { words, bits } = layout else {
        return None;
    };
    let (b, l, c) = (i / LANES, i % LANES, j / LANES);
    let mut d = 0;
    for w in 0..*words {
        d += (bits[(b * words + w) * LANES + l] ^ bits[(c * words + w) * LANES + j % LANES])
            .count_ones();
    }
    let k = *table.values.get(d as usize)?;
    Some(k * (y[i] * y[j]) as f32)
}

/// The bits of a query that is a bit row (every value 0 or 1) into `qb`; false otherwise.
#[inline(always)]
pub(super) fn query_bits(q: &[f64], qb: &mut [u64]) -> bool {
    let mut other = false;
    for (w, chunk) in q.chunks(64).enumerate() {
        let mut x = 0u64;
        for (b, &v) in chunk.iter().enumerate() {
            x |= ((v != 0.0) as u64) << b;
            other |= v != 0.0 && v != 1.0;
        }
        qb[w] = x;
    }
    !other
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The AVX2 blocks give the portable blocks' entries bit for bit, with distances below 32
    /// (register table) and above (gather), for one to three words.
    #[test]
    fn avx2_blocks_equal_the_portable_blocks() {
        #[cfg(target_arch = "x86_64")]
        {
            if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")) {
                eprintln!("SKIPPED: no AVX2 on this CPU (the portable blocks run)");
                return;
            }
            let mut r = SplitMix64::new(21);
            fn check<const W: usize>(r: &mut SplitMix64, density: f64) {
                let blocks = 9;
                let n = blocks * LANES;
                let bit = |r: &mut SplitMix64| -> u64 {
                    (0..64).fold(0u64, |x, b| x | (((r.next_f64() < density) as u64) << b))
                };
                let bits: Vec<u64> = (0..n * W).map(|_| bit(r)).collect();
                let q: [u64; W] = std::array::from_fn(|_| bit(r));
                let values: Vec<f32> = (0..=64 * W)
                    .map(|d| ((-0.05 * d as f64).exp() + 1.0) as f32)
                    .collect();
                let y: Vec<f64> = (0..n)
                    .map(|_| if r.next_f64() < 0.5 { -1.0 } else { 1.0 })
                    .collect();
                for yj in [1.0, -1.0] {
                    let mut plain = vec![f32::NAN; n];
                    hamming_blocks::<W>(&bits, &q, &values, &y, yj, &mut plain, 0, blocks);
                    let mut avx2 = vec![f32::NAN; n];
                    // SAFETY: the CPU has AVX2 and FMA (checked above).
                    unsafe {
                        hamming_blocks_avx2::<W>(&bits, &q, &values, &y, yj, &mut avx2, 1, blocks)
                    };
                    avx2[..LANES].copy_from_slice(&plain[..LANES]);
                    let (a, b): (Vec<u32>, Vec<u32>) = (
                        plain.iter().map(|v| v.to_bits()).collect(),
                        avx2.iter().map(|v| v.to_bits()).collect(),
                    );
                    assert_eq!(a, b, "W {W}, density {density}");
                }
            }
            for density in [0.05, 0.2, 0.5] {
                check::<1>(&mut r, density);
                check::<2>(&mut r, density);
                check::<3>(&mut r, density);
            }
        }
    }
}
