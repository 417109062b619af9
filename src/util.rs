//! Small helpers shared by the CLI, reports and readers: number formatting, and what this
//! machine's memory allows.

/// The shortest text that reads back as exactly `x`, in exponent form outside [1e-4, 1e6)
/// (`0.5`, `4.180273436993281e-7`): what messages print for a value a user may pass back.
#[cfg(any(feature = "cli", test))]
pub fn fmt_exact(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e6).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// C's `%g` with `prec` significant digits (as svm-predict prints its accuracy).
#[cfg(any(feature = "charts", test))]
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

#[cfg(any(feature = "charts", test))]
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// This machine's available memory (MemAvailable of /proc/meminfo) in bytes; None where it
/// cannot be read.
pub fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Bytes fwsvm keeps per feature index in its arrays that span every index up to the highest
/// (a batch of kernel columns' query rows, scaling ranges, feature maps): a budget, on the
/// safe side.
pub const BYTES_PER_FEATURE: u64 = 128;

/// The highest feature index whose arrays ([`BYTES_PER_FEATURE`] each) fit in half of this
/// machine's available memory (2^28 where that cannot be read); read once.
pub fn max_features() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| match mem_available() {
        Some(b) => (b / 2 / BYTES_PER_FEATURE).max(1 << 20) as usize,
        None => 1 << 28,
    })
}

/// Why `features` feature indices are more than this machine holds arrays for (see
/// [`max_features`]), and what to do.
pub fn too_many_features(features: usize) -> String {
    let gb = |b: u64| b as f64 / 1e9;
    format!(
        "fwsvm keeps arrays over every feature index up to the highest ({} bytes each: {:.1} GB \
         for {features}), more than half of this machine's available memory allows (indices up \
         to {}); renumber the features to a compact range (`fwsvm convert renumber`)",
        BYTES_PER_FEATURE,
        gb(features as u64 * BYTES_PER_FEATURE),
        max_features()
    )
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
