//! What this machine's memory allows: the budgets behind the readers' and backends' limits.

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
