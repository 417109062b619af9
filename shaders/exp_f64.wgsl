// exp for the f64 kernel arithmetic (WGSL's exp has no f64 overload), for x ≤ 0 as the RBF
// needs, in the steps of the CPU's `simd::exp_nonpos`, so a column is the same number on
// either side but for rare roundings: x clamped at −708, k = x·log₂e rounded to an integer
// (the CPU rounds the fused x·log₂e + 1.5·2⁵², which a shader compiler may fold away: they
// differ only where x·log₂e lies within an ulp of a half), r = x − k·ln2 by two fused
// multiply-adds (ln 2 split in two), e^r by the degree-10 polynomial `simd::POLY64` in
// Horner's fused steps, then the exact scaling by 2^k built from squarings of 1/2.

fn exp_gt(x0: f64) -> f64 {
    let x = min(max(x0, f64(-708.0)), f64(0.0));
    let k = round(x * f64(1.4426950408889634));
    var r = fma(-k, f64(0.6931471803691238), x);
    r = fma(-k, f64(1.9082149292705877e-10), r);
    var s = f64(2.7476800484095515e-7);
    s = fma(s, r, f64(2.7634990756978247e-6));
    s = fma(s, r, f64(2.480193170810392e-5));
    s = fma(s, r, f64(1.984118523626433e-4));
    s = fma(s, r, f64(1.3888888516236323e-3));
    s = fma(s, r, f64(8.333333370870067e-3));
    s = fma(s, r, f64(4.166666666813645e-2));
    s = fma(s, r, f64(1.6666666666611554e-1));
    s = fma(s, r, f64(4.9999999999998324e-1));
    s = fma(s, r, f64(1.0));
    s = fma(s, r, f64(1.0));
    var e = u32(-k);
    var p = f64(0.5);
    var scale = f64(1.0);
    for (var b = 0u; b < 11u; b++) {
        if ((e & 1u) != 0u) {
            scale *= p;
        }
        p *= p;
        e >>= 1u;
    }
    return s * scale;
}
