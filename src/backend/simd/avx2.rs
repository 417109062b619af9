//! Small AVX2 pieces the hand-written kernels share (the screen, the panels, bit rows).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The number of ones in each byte of `v` (VPSHUFB on a nibble table, twice).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn popcnt_bytes(v: __m256i) -> __m256i {
    let nib = _mm256_set1_epi8(0x0f);
    let lut = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, nib));
    let hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16::<4>(v), nib));
    _mm256_add_epi8(lo, hi)
}

/// The sum of the four lanes of `v`: (v0 + v2) + (v1 + v3).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn hsum_pd(v: __m256d) -> f64 {
    let h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd::<1>(v));
    _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)))
}
