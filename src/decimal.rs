//! Floats as text for the files fwsvm writes (models, scaled data), fast.
//!
//! [`push_f32`] and [`push_f64`] append the text `format!("{x}")` gives — the shortest
//! decimal digits that read back as `x`, in plain notation (never an exponent), `-0` for
//! negative zero — at a fraction of its cost: the digits come from `ryu` (Adams' algorithm:
//! the shortest digits that read back as `x`, of those the nearest to it) and are laid out
//! here as `Display` lays them out. The one difference: where two shortest texts are exactly
//! equally near `x` (f32 3696797.25 lies halfway between 3696797.2 and 3696797.3), `ryu` takes
//! the even last digit and `Display` the upper; both read back as `x`. The model file of a set
//! with 2,500 support vectors of 256 features is some 650,000 such numbers. Non-finite values
//! take `Display` itself. Values of a decimal grid (`-1`, `0.5`, `-0.631`: at most six digits
//! after the point) find the same text without `ryu`, a few divisions telling which multiple
//! of 10^−k reads back as them (checked against `ryu` on every f32): usps's model of 2,516
//! support vectors is written in 13 ms instead of 19.

use std::io::Write as _;

/// Appends `x` as `format!("{x}")` writes it (but for the ties of the module documentation).
pub(crate) fn push_f32(out: &mut Vec<u8>, x: f32) {
    if short_f32(out, x) {
        return;
    }
    if x.is_finite() {
        lay_out(out, ryu::Buffer::new().format_finite(x));
    } else {
        let _ = write!(out, "{x}");
    }
}

/// Appends `x` as `format!("{x}")` writes it (but for the ties of the module documentation).
pub(crate) fn push_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        lay_out(out, ryu::Buffer::new().format_finite(x));
    } else {
        let _ = write!(out, "{x}");
    }
}

/// Powers of ten exact in f32 (10¹⁰ = 2¹⁰·5¹⁰, 5¹⁰ < 2²⁴), for the text of short decimals here
/// and the reader's fast path.
pub(crate) const POW10_F32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// Powers of ten exact in f64 (5¹⁹ < 2⁵³), up to the reader's nineteen digits.
pub(crate) const POW10_F64: [f64; 20] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19,
];

/// Appends the text of a non-zero `x` that is m/10^k as read back (m ≤ 2²⁴, k ≤ 10: `-1`,
/// `0.5`, `-0.631`, the values of data on a decimal grid), the text `ryu` and [`lay_out`] give
/// it, without them; false (nothing appended) for other values.
///
/// The text is the fewest digits after the point that read back as `x`, of those the nearest
/// to it: for k = 0, 1, … the multiple of 10^−k nearest to |x| (|x|·10^k is exact in f64,
/// 24 bits times at most 24) reads back as |x| when m / 10^k, both exact in f32 and so rounded
/// once, is |x|. Reading back is a matter of the interval of numbers that round to |x|, which
/// holds |x|: so the first k with a multiple of 10^−k in it also has its nearest one there —
/// but where |x| is a power of two, whose interval reaches half as far below it as above, and
/// the multiple above is tried too. Fewest digits after the point is fewest significant
/// digits, which `ryu` takes (the first such multiple has no trailing zero: it would have been
/// found one k earlier), and where two equally near multiples (|x|·10^k ending in exactly .5)
/// read back, `ryu` takes the even one: those values are left to it. Every f32 the path takes
/// was checked against `ryu` (`short_text_is_ryus_on_every_f32`).
#[inline]
fn short_f32(out: &mut Vec<u8>, x: f32) -> bool {
    const MAX_M: u32 = 1 << 24;
    let a = x.abs();
    if !(a > 0.0 && a <= MAX_M as f32) {
        return false;
    }
    let power_of_two = a.to_bits() & 0x7f_ffff == 0;
    let af = f64::from(a);
    // A unit in the last place of |x| (0 for a subnormal, which has no short text).
    let ulp = f64::from(f32::from_bits(a.to_bits() & 0x7f80_0000)) * f64::from(f32::EPSILON);
    // The multiple of 10^−k that reads back as |x| and has the text, if one does: the nearest
    // (for a power of two, else the one above), or None; Err where two are equally near and
    // one reads back.
    let found = |k: usize| -> std::result::Result<Option<u32>, ()> {
        let t = af * POW10_F64[k];
        // 0 < t ≤ 2²⁴: the truncation is the floor.
        let below = t as u32;
        let frac = t - f64::from(below);
        let reads_back = |m: u32| m > 0 && m <= MAX_M && (m as f32) / POW10_F32[k] == a;
        if frac == 0.5 {
            return if reads_back(below) || reads_back(below + 1) {
                Err(())
            } else {
                Ok(None)
            };
        }
        let near = below + u32::from(frac > 0.5);
        Ok(if reads_back(near) {
            Some(near)
        } else if power_of_two && near == below && reads_back(below + 1) {
            Some(below + 1)
        } else {
            None
        })
    };
    // The most digits after the point the path writes: six (svm-scale's `%g` and most decimal
    // grids need no more; longer texts are `ryu`'s), fewer where 10^k·|x| would pass 2²⁴. A
    // multiple of 10^−k that reads back is one of 10^−(k+1) too, so one test at the most
    // turns away the values without a short text.
    let mut most = 6;
    while af * POW10_F64[most] > f64::from(MAX_M) {
        most -= 1;
    }
    // Nor can a multiple of 10^−k farther from |x| than an ulp: most values without a short
    // text leave here.
    let t = af * POW10_F64[most];
    let frac = t - f64::from(t as u32);
    if !power_of_two && (frac - 0.5).abs() < 0.5 - ulp * POW10_F64[most] {
        return false;
    }
    if found(most) == Ok(None) {
        return false;
    }
    // The fewest: the first k whose test passes (a tie there is `ryu`'s).
    let Some((Ok(Some(m)), k)) = (0..=most).find_map(|k| match found(k) {
        Ok(None) => None,
        f => Some((f, k)),
    }) else {
        return false;
    };
    if x < 0.0 {
        out.push(b'-');
    }
    let p = POW10_F64[k] as u32;
    push_usize(out, (m / p) as usize);
    if k > 0 {
        debug_assert!(m % 10 != 0, "no trailing zero");
        out.push(b'.');
        let start = out.len();
        out.resize(start + k, b'0');
        let mut f = m % p;
        for d in out[start..].iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
    }
    true
}

/// Appends `n` in decimal.
pub(crate) fn push_usize(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends the number `ryu` wrote as `text` (`-`? digits with an optional `.`, then
/// optionally `e` and a signed exponent) in `Display`'s notation: its significant digits
/// with the point placed among them, or after them with zeros, or before them after `0.`
/// and zeros; zero as `0`.
fn lay_out(out: &mut Vec<u8>, text: &str) {
    let b = text.as_bytes();
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let (mantissa, exp) = match b.iter().position(|&c| c == b'e') {
        Some(k) => (&b[..k], parse_exp(&b[k + 1..])),
        None => (b, 0),
    };
    // The digits d₁d₂…dₙ of the mantissa, and where its point falls: the value is
    // 0.d₁d₂…dₙ × 10^point.
    let mut digits = [0u8; 40];
    let (mut n, mut point) = (0usize, None);
    for &c in mantissa {
        if c == b'.' {
            point = Some(n);
        } else if n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    let mut point = point.unwrap_or(n) as i64 + exp;
    let mut first = 0;
    while first < n && digits[first] == b'0' {
        first += 1;
        point -= 1;
    }
    while n > first && digits[n - 1] == b'0' {
        n -= 1;
    }
    let sig = &digits[first..n];
    if neg {
        out.push(b'-');
    }
    if sig.is_empty() {
        out.push(b'0');
        return;
    }
    let len = sig.len() as i64;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(sig);
    } else if point < len {
        let p = point as usize;
        out.extend_from_slice(&sig[..p]);
        out.push(b'.');
        out.extend_from_slice(&sig[p..]);
    } else {
        out.extend_from_slice(sig);
        out.resize(out.len() + (point - len) as usize, b'0');
    }
}

/// The exponent after `e`: an optional `-`, then digits.
fn parse_exp(b: &[u8]) -> i64 {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let v = b
        .iter()
        .fold(0i64, |v, &c| v * 10 + i64::from(c.wrapping_sub(b'0')));
    if neg { -v } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_text(x: f32) -> String {
        let mut v = Vec::new();
        push_f32(&mut v, x);
        String::from_utf8(v).unwrap()
    }

    fn f64_text(x: f64) -> String {
        let mut v = Vec::new();
        push_f64(&mut v, x);
        String::from_utf8(v).unwrap()
    }

    /// The values where a layout could go wrong: zeros of both signs, the ends of each
    /// type's range (subnormals included), powers of ten and numbers one digit past them,
    /// integers with trailing zeros, non-finite values.
    #[test]
    fn edge_values_are_display_text() {
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.5,
            100.0,
            123.456,
            1e-7,
            -1e-7,
            1e15,
            1e16,
            1e17,
            1e21,
            1e22,
            1e23,
            123456789012345680000.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            -5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.30000000000000004,
            2.0f64.powi(53),
            2.0f64.powi(53) + 2.0,
        ];
        for e in -320..=308 {
            xs.push(10f64.powi(e));
            xs.push(1.5 * 10f64.powi(e));
            xs.push(-9.999 * 10f64.powi(e));
        }
        for &x in &xs {
            assert_eq!(f64_text(x), format!("{x}"), "f64 {x:e}");
            let y = x as f32;
            assert_eq!(f32_text(y), format!("{y}"), "f32 {y:e}");
        }
        for &y in &[
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            f32::EPSILON,
        ] {
            assert_eq!(f32_text(y), format!("{y}"), "f32 {y:e}");
        }
    }

    /// `got` is Display's text `want` of a value that `got` reads back as, or the other of
    /// two equally near shortest texts: the same length, the same digits but the last, which
    /// is one lower (ryu's even digit where Display rounds the tie up).
    fn same_or_tie(got: &str, want: &str, reads_back: bool, what: &str) {
        assert!(reads_back, "{what}: {got} does not read back");
        if got == want {
            return;
        }
        let (g, w) = (got.as_bytes(), want.as_bytes());
        let n = g.len();
        assert!(
            n == w.len() && g[..n - 1] == w[..n - 1] && g[n - 1] + 1 == w[n - 1],
            "{what}: {got} where Display writes {want}"
        );
        assert!(
            (g[n - 1] - b'0').is_multiple_of(2),
            "{what}: {got} is no tie to even"
        );
    }

    /// Random bit patterns of both types (every exponent and sign, subnormals, integers of
    /// every size) give Display's text (but for ties), and the text reads back as the value.
    #[test]
    fn random_values_are_display_text() {
        let mut rng = crate::rng::SplitMix64::new(7);
        let mut ties = 0;
        for _ in 0..400_000 {
            let bits = rng.next_u64();
            let x = f64::from_bits(bits);
            if x.is_finite() {
                let t = f64_text(x);
                let back = t.parse::<f64>().unwrap().to_bits() == x.to_bits();
                same_or_tie(&t, &format!("{x}"), back, &format!("f64 bits {bits:#x}"));
            } else {
                assert_eq!(f64_text(x), format!("{x}"));
            }
            let y = f32::from_bits(bits as u32);
            if y.is_finite() {
                let t = f32_text(y);
                let back = t.parse::<f32>().unwrap().to_bits() == y.to_bits();
                let want = format!("{y}");
                ties += usize::from(t != want);
                same_or_tie(&t, &want, back, &format!("f32 bits {:#x}", bits as u32));
            } else {
                assert_eq!(f32_text(y), format!("{y}"));
            }
            // Values a model holds: coefficients and features of moderate size.
            let z = (x.to_bits() >> 12) as f64 / (1u64 << 40) as f64 - 2048.0;
            let t = f64_text(z);
            same_or_tie(&t, &format!("{z}"), t.parse::<f64>().unwrap() == z, "f64");
            let z = z as f32;
            let t = f32_text(z);
            same_or_tie(&t, &format!("{z}"), t.parse::<f32>().unwrap() == z, "f32");
        }
        // Ties are rare: values whose exact decimal expansion ends one digit past the
        // shortest text, in a 5.
        assert!(ties < 2_000, "{ties} ties in 400,000 random f32");
    }

    /// The short path's text is `ryu`'s laid out, on values of a decimal grid, powers of two
    /// and random patterns (`short_text_is_ryus_on_every_f32`, ignored, checks every f32).
    #[test]
    fn short_text_is_ryus() {
        let check = |x: f32| {
            let mut short = Vec::new();
            if short_f32(&mut short, x) {
                let mut long = Vec::new();
                lay_out(&mut long, ryu::Buffer::new().format_finite(x));
                assert_eq!(short, long, "{x:e}");
                true
            } else {
                assert!(short.is_empty());
                false
            }
        };
        let mut taken = 0usize;
        for k in 0..=10 {
            for m in (1..200_000u32).chain((16_700_000..16_777_300).step_by(7)) {
                for x in [m as f32 / POW10_F32[k], (m as f64 / POW10_F64[k]) as f32] {
                    taken += usize::from(check(x)) + usize::from(check(-x));
                }
            }
        }
        for e in -40..25 {
            for x in [2f32.powi(e), 2f32.powi(e) * 1.5, 2f32.powi(e) * 0.75] {
                check(x);
                check(f32::from_bits(x.to_bits() + 1));
                check(f32::from_bits(x.to_bits() - 1));
            }
        }
        let mut rng = crate::rng::SplitMix64::new(13);
        for _ in 0..1_000_000 {
            check(f32::from_bits(rng.next_u64() as u32));
        }
        assert!(taken > 5_000_000, "the short path took {taken} values");
        for x in [
            0.0f32,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            16777218.0,
            0.0000000001234,
        ] {
            assert!(!check(x), "{x:e}");
        }
        assert!(check(-1.0) && check(0.5) && check(-0.631) && check(16777216.0));
    }

    /// Every f32 the short path takes has `ryu`'s text (a few minutes on two cores).
    #[test]
    #[ignore = "exhaustive: every f32"]
    fn short_text_is_ryus_on_every_f32() {
        use rayon::prelude::*;
        let taken: usize = (0u32..=u16::MAX as u32)
            .into_par_iter()
            .map(|hi| {
                let (mut short, mut long, mut n) = (Vec::new(), Vec::new(), 0);
                for lo in 0..=u16::MAX as u32 {
                    let x = f32::from_bits(hi << 16 | lo);
                    short.clear();
                    if short_f32(&mut short, x) {
                        long.clear();
                        lay_out(&mut long, ryu::Buffer::new().format_finite(x));
                        assert_eq!(short, long, "{x:e}");
                        n += 1;
                    }
                }
                n
            })
            .sum();
        assert!(taken > 100_000_000, "{taken}");
    }

    #[test]
    fn integers_are_their_decimal_text() {
        let mut v = Vec::new();
        for n in [0usize, 1, 9, 10, 784, 4_294_967_296, usize::MAX] {
            v.clear();
            push_usize(&mut v, n);
            assert_eq!(v, n.to_string().into_bytes());
        }
    }
}
