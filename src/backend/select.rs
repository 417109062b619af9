//! The k lowest (value, index) pairs of a vector, bounded by the last call's selection: the
//! working set's toward candidates (lowest g) and away candidates (highest g over the support).

/// The `k` smallest of the n pairs `all()` yields into `out`, ascending, with `bound` = (k, the
/// 2k-th smallest) of the last call: values move little between calls, so a pass keeping the
/// pairs at or below the bound usually finds k of them, and then the k smallest overall are
/// among them (the k-th smallest is ≤ the bound); with fewer, all n are selected from.
pub fn select_lowest_bounded<I: Iterator<Item = (f64, usize)>>(
    all: impl Fn() -> I,
    n: usize,
    k: usize,
    bound: &mut (usize, f64),
    out: &mut Vec<(f64, usize)>,
) {
    let below = |t: f64, keep: &mut Keep<'_>| {
        for e in all().filter(|e| e.0 <= t) {
            keep.push(e);
        }
    };
    let every = |keep: &mut Keep<'_>| {
        for e in all() {
            keep.push(e);
        }
    };
    select_lowest_from(below, every, n, k, bound, out);
}

/// [`select_lowest_bounded`] over the values of a slice (index = position), its bounded pass
/// testing eight values at a time: most blocks hold none at or below the bound. From
/// [`PAR_MIN`] values on, by chunks on rayon's threads ([`select_lowest_bounded_chunks`]).
pub fn select_lowest_bounded_slice(
    g: &[f64],
    k: usize,
    bound: &mut (usize, f64),
    out: &mut Vec<(f64, usize)>,
) {
    if g.len() >= PAR_MIN {
        select_lowest_bounded_chunks(g, PAR_CHUNK, k, bound, out);
    } else {
        select_lowest_bounded_serial(g, k, bound, out);
    }
}

/// Values from which [`select_lowest_bounded_slice`] runs by chunks: a pass over a
/// million-point gradient costs milliseconds, far more than waking rayon's threads.
pub const PAR_MIN: usize = 1 << 18;
const PAR_CHUNK: usize = 1 << 16;

/// [`select_lowest_bounded_slice`] by chunks of `chunk` values in parallel: each chunk keeps its
/// own 2k lowest pairs at or below the bound (or of all its pairs), and the 2k lowest of what
/// the chunks kept are the 2k lowest of the whole, so the result, the bound and the decision to
/// select from every pair are those of one pass.
pub fn select_lowest_bounded_chunks(
    g: &[f64],
    chunk: usize,
    k: usize,
    bound: &mut (usize, f64),
    out: &mut Vec<(f64, usize)>,
) {
    use rayon::prelude::*;
    let keep = 2 * k;
    let cap = (4 * k).max(1024);
    let gather = |t: f64| -> Vec<(f64, usize)> {
        let lists: Vec<Vec<(f64, usize)>> = g
            .par_chunks(chunk.max(8))
            .enumerate()
            .map(|(c, part)| {
                let mut v = Vec::new();
                let mut kp = Keep {
                    out: &mut v,
                    keep,
                    cap,
                    worst: None,
                };
                offer_below(part, c * chunk.max(8), t, &mut kp);
                if v.len() > keep {
                    select_lowest(&mut v, keep);
                }
                v
            })
            .collect();
        lists.concat()
    };
    out.clear();
    if k > 0 && bound.0 == k {
        *out = gather(bound.1);
    }
    if out.len() < k.min(g.len()) {
        out.clear();
        if k > 0 {
            // Every pair, NaN included (as the one-pass selection offers them).
            *out = gather(f64::NAN);
        }
    }
    select_lowest(out, keep);
    *bound = (k, out.last().map_or(f64::NEG_INFINITY, |l| l.0));
    out.truncate(k);
}

/// Offers `keep` the pairs (v, i0 + position) of `part` with v ≤ t, eight values at a time;
/// every pair when t is NaN.
fn offer_below(part: &[f64], i0: usize, t: f64, keep: &mut Keep<'_>) {
    if t.is_nan() {
        for (&v, i) in part.iter().zip(i0..) {
            keep.push((v, i));
        }
        return;
    }
    let mut blocks = part.chunks_exact(8);
    for (b, blk) in (&mut blocks).enumerate() {
        // The block test uses the tighter of the bound and the kept pairs' threshold.
        let t = t.min(keep.threshold());
        if blk.iter().fold(false, |any, &v| any | (v <= t)) {
            for (&v, i) in blk.iter().zip(i0 + 8 * b..) {
                if v <= t {
                    keep.push((v, i));
                }
            }
        }
    }
    let r0 = i0 + part.len() - blocks.remainder().len();
    for (&v, i) in blocks.remainder().iter().zip(r0..) {
        if v <= t {
            keep.push((v, i));
        }
    }
}

/// [`select_lowest_bounded_slice`] in one pass on this thread.
fn select_lowest_bounded_serial(
    g: &[f64],
    k: usize,
    bound: &mut (usize, f64),
    out: &mut Vec<(f64, usize)>,
) {
    let below = |t: f64, keep: &mut Keep<'_>| offer_below(g, 0, t, keep);
    let every = |keep: &mut Keep<'_>| offer_below(g, 0, f64::NAN, keep);
    select_lowest_from(below, every, g.len(), k, bound, out);
}

/// Collects candidate pairs for the `keep` smallest, pruning to them whenever `cap` are held:
/// a pair at or above the kept `keep`-th smallest (by value, then index) can no longer be among
/// them. Many equal values at the bound (a cold start's untouched points) then cost one pass,
/// not a selection over all of them; the pairs kept are those a selection over all would keep.
struct Keep<'a> {
    out: &'a mut Vec<(f64, usize)>,
    keep: usize,
    cap: usize,
    /// The kept `keep`-th smallest after the last pruning.
    worst: Option<(f64, usize)>,
}

impl Keep<'_> {
    fn push(&mut self, e: (f64, usize)) {
        if let Some(w) = self.worst
            && lowest_order(&e, &w) != std::cmp::Ordering::Less
        {
            return;
        }
        self.out.push(e);
        if self.out.len() >= self.cap {
            select_lowest(self.out, self.keep);
            self.worst = self.out.last().copied();
        }
    }

    /// No pair above this value can still be kept (+∞ before the first pruning).
    fn threshold(&self) -> f64 {
        self.worst.map_or(f64::INFINITY, |w| w.0)
    }
}

/// The common part: `below(t, keep)` offers the pairs at or below t, `every(keep)` every pair.
fn select_lowest_from(
    below: impl Fn(f64, &mut Keep<'_>),
    every: impl Fn(&mut Keep<'_>),
    n: usize,
    k: usize,
    bound: &mut (usize, f64),
    out: &mut Vec<(f64, usize)>,
) {
    out.clear();
    let keep = 2 * k;
    let cap = (4 * k).max(1024);
    if k > 0 && bound.0 == k {
        below(
            bound.1,
            &mut Keep {
                out,
                keep,
                cap,
                worst: None,
            },
        );
    }
    if out.len() < k.min(n) {
        out.clear();
        if k > 0 {
            every(&mut Keep {
                out,
                keep,
                cap,
                worst: None,
            });
        }
    }
    select_lowest(out, keep);
    *bound = (k, out.last().map_or(f64::NEG_INFINITY, |l| l.0));
    out.truncate(k);
}

/// The order of [`select_lowest`]: value (total order), then index.
fn lowest_order(a: &(f64, usize), b: &(f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// Keeps the `k` smallest (value, index) pairs of `v`, ascending (lower index first on ties).
pub fn select_lowest(v: &mut Vec<(f64, usize)>, k: usize) {
    let cmp = lowest_order;
    if k == 0 {
        v.clear();
        return;
    }
    if v.len() > k {
        v.select_nth_unstable_by(k - 1, cmp);
        v.truncate(k);
    }
    v.sort_unstable_by(cmp);
}
