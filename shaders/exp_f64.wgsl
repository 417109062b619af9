// exp for the f64 kernel arithmetic (WGSL's exp has no f64 overload), for x ≤ 0 as the RBF
// needs: x = k·ln2 + r with |r| ≤ ln2/2, exp(r) by its Taylor series to r^13/13! (truncation
// below 4e-18 relative), then the exact scaling by 2^k built from squarings of 1/2.

fn exp_gt(x: f64) -> f64 {
    if (x < f64(-708.0)) {
        return f64(0.0);
    }
    let k = round(x * f64(1.4426950408889634));
    let r = (x - k * f64(0.6931471803691238)) - k * f64(1.9082149292705877e-10);
    var s = f64(1.0);
    for (var n = 13; n >= 1; n--) {
        s = fma(s, r / f64(n), f64(1.0));
    }
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
