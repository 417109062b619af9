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
/// `PAR_MIN` (32,768) values on, by chunks on the team's threads ([`select_lowest_bounded_par`]),
/// whose lists `lists` keeps between calls.
pub fn select_lowest_bounded_slice(
    g: &[f64],
    k: usize,
    bound: &mut (usize, f64),
    lists: &mut ChunkLists,
    out: &mut Vec<(f64, usize)>,
) {
    if g.len() >= PAR_MIN {
        select_lowest_bounded_chunks(g, PAR_CHUNK, k, bound, lists, out);
    } else {
        select_lowest_bounded_serial(g, k, bound, out);
    }
}

/// Values from which [`select_lowest_bounded_slice`] runs by chunks: below it a pass costs
/// less than handing chunks to the team's other threads and merging their lists.
pub const PAR_MIN: usize = 1 << 15;
/// Values per chunk of a parallel selection over a slice.
pub const PAR_CHUNK: usize = 1 << 13;

/// [`select_lowest_bounded_slice`] by chunks of `chunk` values in parallel.
pub fn select_lowest_bounded_chunks(
    g: &[f64],
    chunk: usize,
    k: usize,
    bound: &mut (usize, f64),
    lists: &mut ChunkLists,
    out: &mut Vec<(f64, usize)>,
) {
    let chunk = chunk.max(8);
    select_lowest_bounded_par(
        g.len().div_ceil(chunk),
        |c, t, keep| {
            let part = &g[c * chunk..g.len().min((c + 1) * chunk)];
            offer_below(part, c * chunk, t, keep);
        },
        g.len(),
        k,
        bound,
        lists,
        out,
    );
}

/// The per-chunk candidate lists of [`select_lowest_bounded_par`], kept by the caller so that
/// a selection allocates nothing once warm.
#[derive(Default)]
pub struct ChunkLists(Vec<std::sync::Mutex<Vec<(f64, usize)>>>);

/// [`select_lowest_bounded`] over `n` pairs produced in `chunks` parts on the team's threads
/// (the crate's own worker team): `offer(c, t, keep)` offers part c's pairs at or below t (every pair
/// when t is NaN) to `keep`. Each part keeps its own 2k lowest, and the 2k lowest of what the
/// parts kept are the 2k lowest of the whole, so the result, the bound and the decision to
/// select from every pair are those of one pass, whatever the threads.
#[allow(clippy::too_many_arguments)]
pub fn select_lowest_bounded_par(
    chunks: usize,
    offer: impl Fn(usize, f64, &mut Keep<'_>) + Sync,
    n: usize,
    k: usize,
    bound: &mut (usize, f64),
    lists: &mut ChunkLists,
    out: &mut Vec<(f64, usize)>,
) {
    let keep = 2 * k;
    let cap = (4 * k).max(1024);
    while lists.0.len() < chunks {
        lists.0.push(Default::default());
    }
    let gather = |t: f64, lists: &ChunkLists, out: &mut Vec<(f64, usize)>| {
        crate::team::run(chunks, &|c| {
            let mut v = lists.0[c].lock().expect("no task panics holding it");
            let mut kp = Keep::new(&mut v, keep, cap);
            offer(c, t, &mut kp);
            if v.len() > keep {
                select_lowest(&mut v, keep);
            }
        });
        for l in &lists.0[..chunks] {
            out.extend_from_slice(&l.lock().expect("no task panics holding it"));
        }
    };
    out.clear();
    if k > 0 && bound.0 == k {
        gather(bound.1, lists, out);
    }
    if out.len() < k.min(n) {
        out.clear();
        if k > 0 {
            // Every pair, NaN included (as the one-pass selection offers them).
            gather(f64::NAN, lists, out);
        }
    }
    select_lowest(out, keep);
    *bound = (k, out.last().map_or(f64::NEG_INFINITY, |l| l.0));
    out.truncate(k);
}

/// Offers `keep` the pairs (v, i0 + position) of `part` with v ≤ t, eight values at a time;
/// every pair when t is NaN ([`Keep::offer_members`] with every bit set: a block none of whose
/// values can still be kept is skipped by one test).
fn offer_below(part: &[f64], i0: usize, t: f64, keep: &mut Keep<'_>) {
    keep.offer_run(part, None, i0, t);
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
pub struct Keep<'a> {
    out: &'a mut Vec<(f64, usize)>,
    keep: usize,
    cap: usize,
    /// The kept `keep`-th smallest after the last pruning.
    worst: Option<(f64, usize)>,
}

impl<'a> Keep<'a> {
    /// A collection into `out` (emptied first) for the `keep` smallest pairs, pruning to them
    /// whenever `cap` (> `keep`) are held.
    pub fn new(out: &'a mut Vec<(f64, usize)>, keep: usize, cap: usize) -> Keep<'a> {
        out.clear();
        Keep {
            out,
            keep,
            cap,
            worst: None,
        }
    }

    /// Offers one pair.
    pub fn push(&mut self, e: (f64, usize)) {
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

    /// Offers the pairs (v\[k\], i0 + k) with bit k of `member` set that pass a bounded
    /// selection's test against `t`: v ≤ t, or any pair when t is NaN (every pair offered);
    /// either way none above the kept pairs' threshold.
    #[inline]
    pub fn offer_members(&mut self, v: &[f64], member: u8, i0: usize, t: f64) {
        let every = t.is_nan();
        let t = if every { f64::INFINITY } else { t }.min(self.threshold());
        let passes = |x: f64| if every { !(x > t) } else { x <= t };
        // The block's test first (branch-free): most blocks offer nothing.
        let mut hits = 0u8;
        for (k, &x) in v.iter().enumerate().take(8) {
            hits |= u8::from(passes(x)) << k;
        }
        hits &= member;
        while hits != 0 {
            let k = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            self.push((v[k], i0 + k));
        }
    }

    /// [`offer_members`](Self::offer_members) over a run of values, eight at a time: the
    /// pairs (v\[k\], i0 + k) whose point is a member (`positions[k]` ≠ [`ActiveSet::OUT`],
    /// every point without `positions`) — one vector compare per eight values where the CPU
    /// has AVX-512, the test of most blocks, which offer nothing.
    ///
    /// [`ActiveSet::OUT`]: crate::active::ActiveSet::OUT
    pub fn offer_run(&mut self, v: &[f64], positions: Option<&[u32]>, i0: usize, t: f64) {
        if let Some(p) = positions {
            assert_eq!(p.len(), v.len());
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU has AVX-512F and VL; `positions` is as long as `v` (checked).
            unsafe { self.offer_run_avx512(v, positions, i0, t) };
            return;
        }
        for (b, blk) in v.chunks(8).enumerate() {
            let member = positions.map_or(u8::MAX, |p| member_bits(&p[8 * b..8 * b + blk.len()]));
            if member != 0 {
                self.offer_members(blk, member, i0 + 8 * b, t);
            }
        }
    }

    /// [`offer_run`](Self::offer_run) with AVX-512: the threshold test of eight values (and
    /// their membership) as one compare each, the passing ones offered as
    /// [`offer_members`](Self::offer_members) offers them.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX-512VL; `positions`, when given, is as long as `v`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn offer_run_avx512(&mut self, v: &[f64], positions: Option<&[u32]>, i0: usize, t: f64) {
        use std::arch::x86_64::*;
        let every = t.is_nan();
        let t0 = if every { f64::INFINITY } else { t };
        let full = v.len() / 8 * 8;
        let out = _mm256_set1_epi32(crate::active::ActiveSet::OUT as i32);
        let mut b = 0;
        while b < full {
            // The kept pairs' threshold falls as the pass goes on.
            let tv = _mm512_set1_pd(t0.min(self.threshold()));
            // SAFETY: b + 8 ≤ v's length, and positions' (the caller's condition).
            let x = unsafe { _mm512_loadu_pd(v.as_ptr().add(b)) };
            let mut hits = if every {
                _mm512_cmp_pd_mask::<_CMP_NGT_UQ>(x, tv)
            } else {
                _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, tv)
            };
            if let Some(p) = positions {
                // SAFETY: as above.
                let pv = unsafe { _mm256_loadu_si256(p.as_ptr().add(b).cast()) };
                hits &= _mm256_cmpneq_epi32_mask(pv, out);
            }
            while hits != 0 {
                let k = hits.trailing_zeros() as usize;
                hits &= hits - 1;
                self.push((v[b + k], i0 + b + k));
            }
            b += 8;
        }
        if full < v.len() {
            let member = positions.map_or(u8::MAX, |p| member_bits(&p[full..]));
            self.offer_members(&v[full..], member, i0 + full, t);
        }
    }

    /// No pair above this value can still be kept (+∞ before the first pruning).
    pub fn threshold(&self) -> f64 {
        self.worst.map_or(f64::INFINITY, |w| w.0)
    }
}

/// Bit k set when `positions[k]` (at most 8) is a member's.
pub(crate) fn member_bits(positions: &[u32]) -> u8 {
    let mut bits = 0u8;
    for (k, &p) in positions.iter().take(8).enumerate() {
        bits |= u8::from(p != crate::active::ActiveSet::OUT) << k;
    }
    bits
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
        below(bound.1, &mut Keep::new(out, keep, cap));
    }
    if out.len() < k.min(n) {
        out.clear();
        if k > 0 {
            every(&mut Keep::new(out, keep, cap));
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
