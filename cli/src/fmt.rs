//! Number formatting for what the command prints: exact values a user may pass back, and
//! C's `%g` as LIBSVM's tools print accuracies.

/// The shortest text that reads back as exactly `x`, in exponent form outside [1e-4, 1e6)
/// (`0.5`, `4.180273436993281e-7`): what messages print for a value a user may pass back.
pub fn fmt_exact(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e6).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// C's `%g` with `prec` significant digits (as svm-predict prints its accuracy).
pub fn fmt_g(x: f64, prec: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let prec = prec.max(1);
    let exp = x.abs().log10().floor() as i32;
    // Round first: rounding may bump the exponent (9.9999995 → 10).
    let s = format!("{:.*e}", prec - 1, x);
    let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(exp);
    if e < -4 || e >= prec as i32 {
        let mant = trim_zeros(mant);
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else {
        let decimals = (prec as i32 - 1 - e).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::{fmt_exact, fmt_g};

    #[test]
    fn exact_reads_back() {
        for x in [
            0.5,
            4.180273436993281e-7,
            0.064882,
            1e-4,
            123456.75,
            3.5e9,
            0.0,
        ] {
            let s = fmt_exact(x);
            assert_eq!(s.parse::<f64>().unwrap(), x, "{s}");
        }
        assert_eq!(fmt_exact(0.5), "0.5");
        assert_eq!(fmt_exact(4.180273436993281e-7), "4.180273436993281e-7");
    }

    #[test]
    fn matches_c_printf() {
        assert_eq!(fmt_g(84.12260918862478, 6), "84.1226");
        assert_eq!(fmt_g(100.0, 6), "100");
        assert_eq!(fmt_g(96.8, 6), "96.8");
        assert_eq!(fmt_g(0.0001234567, 6), "0.000123457");
        assert_eq!(fmt_g(1234567.0, 6), "1.23457e+06");
        assert_eq!(fmt_g(99.99999999, 6), "100");
        assert_eq!(fmt_g(1e-5, 6), "1e-05");
    }
}
