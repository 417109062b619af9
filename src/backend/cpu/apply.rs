//! The update of a block of rows by every column at once: h ← s·h + Σ_k a_k·col_k with h held
//! in registers across the columns, instead of one pass over h per pair of columns.
//!
//! Row i takes the operations of the pair-by-pair update ([`super::apply_by_pairs`]) in the
//! same order — s·h on the first pair, then (v + a₀·c₀) + a₁·c₁ for each pair, a lone last
//! column as v + a₀·c₀, every product and sum rounded on its own — so h is the same bit for
//! bit (tested); only the loads and stores of h between pairs are gone. With q columns a block
//! of rows reads h once instead of q/2 times, and writes it once.

use super::SendPtr;
use crate::backend::simd::Elem;

/// Applies `ptrs` (each a column's row 0 and its factor) to h = rows r0..r0 + h.len() with
/// every column at once, where this kernel serves: f32 columns on a CPU with AVX-512 and at
/// least one column (none leaves h as it is, as the pairs do). False when it did nothing.
pub(super) fn all_columns<T: Elem>(
    h: &mut [f64],
    ptrs: &[(SendPtr<T>, f64)],
    r0: usize,
    scale: f64,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if T::SINGLE && !ptrs.is_empty() && std::is_x86_feature_detected!("avx512f") {
            // SAFETY: T is f32 (the one SINGLE Elem), so the pointers are f32 pointers; every
            // column holds rows r0..r0 + h.len() (the callers' contract); AVX-512F is present.
            unsafe {
                let cols = std::slice::from_raw_parts(
                    ptrs.as_ptr().cast::<(SendPtr<f32>, f64)>(),
                    ptrs.len(),
                );
                all_f32_avx512(h, cols, r0, scale);
            }
            return true;
        }
    }
    let _ = (h, ptrs, r0, scale);
    false
}

/// Rows of the register tile: eight vectors of eight f64.
const TILE: usize = 64;

/// [`all_columns`] for f32 columns.
///
/// # Safety
///
/// Every column holds rows r0..r0 + h.len(); the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn all_f32_avx512(h: &mut [f64], cols: &[(SendPtr<f32>, f64)], r0: usize, scale: f64) {
    use std::arch::x86_64::*;
    let n = h.len();
    let hp = h.as_mut_ptr();
    let vs = _mm512_set1_pd(scale);
    let mut i = 0;
    // SAFETY: every load and store below reads rows i..i + TILE (or + 8, or row i) that lie
    // within h and within each column's rows r0..r0 + n.
    unsafe {
        while i + TILE <= n {
            let mut acc = [_mm512_setzero_pd(); 8];
            for (v, a) in acc.iter_mut().enumerate() {
                *a = _mm512_mul_pd(vs, _mm512_loadu_pd(hp.add(i + 8 * v)));
            }
            for two in cols.chunks(2) {
                let p0 = two[0].0.at(r0 + i).cast_const();
                let a0 = _mm512_set1_pd(two[0].1);
                if let Some(&(c1, f1)) = two.get(1) {
                    let p1 = c1.at(r0 + i).cast_const();
                    let a1 = _mm512_set1_pd(f1);
                    for (v, a) in acc.iter_mut().enumerate() {
                        let x0 = _mm512_cvtps_pd(_mm256_loadu_ps(p0.add(8 * v)));
                        let x1 = _mm512_cvtps_pd(_mm256_loadu_ps(p1.add(8 * v)));
                        *a = _mm512_add_pd(*a, _mm512_mul_pd(a0, x0));
                        *a = _mm512_add_pd(*a, _mm512_mul_pd(a1, x1));
                    }
                } else {
                    for (v, a) in acc.iter_mut().enumerate() {
                        let x0 = _mm512_cvtps_pd(_mm256_loadu_ps(p0.add(8 * v)));
                        *a = _mm512_add_pd(*a, _mm512_mul_pd(a0, x0));
                    }
                }
            }
            for (v, a) in acc.iter().enumerate() {
                _mm512_storeu_pd(hp.add(i + 8 * v), *a);
            }
            i += TILE;
        }
        while i + 8 <= n {
            let mut a = _mm512_mul_pd(vs, _mm512_loadu_pd(hp.add(i)));
            for two in cols.chunks(2) {
                let x0 = _mm512_cvtps_pd(_mm256_loadu_ps(two[0].0.at(r0 + i).cast_const()));
                a = _mm512_add_pd(a, _mm512_mul_pd(_mm512_set1_pd(two[0].1), x0));
                if let Some(&(c1, f1)) = two.get(1) {
                    let x1 = _mm512_cvtps_pd(_mm256_loadu_ps(c1.at(r0 + i).cast_const()));
                    a = _mm512_add_pd(a, _mm512_mul_pd(_mm512_set1_pd(f1), x1));
                }
            }
            _mm512_storeu_pd(hp.add(i), a);
            i += 8;
        }
        while i < n {
            let mut v = scale * *hp.add(i);
            for two in cols.chunks(2) {
                v += two[0].1 * f64::from(*two[0].0.at(r0 + i));
                if let Some(&(c1, f1)) = two.get(1) {
                    v += f1 * f64::from(*c1.at(r0 + i));
                }
            }
            *hp.add(i) = v;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Every column at once gives the pairs' h bit for bit: row counts around the register
    /// tile and the vector, odd and even column counts, a scale of one and another.
    #[test]
    fn all_columns_at_once_are_the_pairs_bit_for_bit() {
        if !std::is_x86_feature_detected!("avx512f") {
            eprintln!("skipped: no AVX-512F on this CPU");
            return;
        }
        let mut rng = SplitMix64::new(7);
        let m = 300;
        let r0 = 5;
        for &q in &[1usize, 2, 3, 8, 9] {
            let mut store: Vec<Vec<f32>> = (0..q)
                .map(|_| {
                    (0..m)
                        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
                        .collect()
                })
                .collect();
            let ptrs: Vec<(SendPtr<f32>, f64)> = store
                .iter_mut()
                .map(|c| (SendPtr(c.as_mut_ptr()), rng.next_f64() * 1e-3 - 5e-4))
                .collect();
            for &n in &[1usize, 7, 8, 63, 64, 65, 130, 200] {
                for &scale in &[1.0, 0.9137] {
                    let h0: Vec<f64> = (0..n).map(|_| rng.next_f64() - 0.5).collect();
                    let mut pairs = h0.clone();
                    super::super::apply_pairs_each(&mut pairs, &ptrs, r0, n, scale, None);
                    let mut all = h0.clone();
                    assert!(all_columns(&mut all, &ptrs, r0, scale));
                    let same = pairs
                        .iter()
                        .zip(&all)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "q {q}, n {n}, scale {scale}");
                    assert_ne!(all, h0, "the update changed nothing");
                }
            }
        }
    }
}
