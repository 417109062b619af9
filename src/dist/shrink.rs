//! Working-set shrinking over ranks: [`crate::solver::shrink`] with every m-vector split by
//! owner.
//!
//! Each rank keeps the exact gradient, the working-set flags and the pinned flags of its own
//! rows only. What one process computes over all points becomes a collective: 2f = αᵀg from
//! the exactly gathered entries of A (in α's order), the size of W as a sum of counts, and the
//! lowest gradients outside W (the fill up to `min_size`) as a selection over every rank's own
//! lowest candidates under the same total order (value, then index) — the same set one process
//! selects. A round is a distributed run ([`DistBackend`]) over the ranks' rows in W, numbered
//! as one process numbers W (rank order, ascending), warm-started from α and its gradient; the
//! check for a smaller W reads each rank's own gradient entries ([`Backend::gather_own`]). The
//! rebuild and the certification are the exact passes of the distributed backend. So the rounds, the
//! iterates and the result are the single-process ones, to the bit with f64 columns.

use super::backend::DistBackend;
use super::comm::Comm;
use super::known::Known;
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::{Backend, CpuConfig, Device};
use crate::error::Result;
use crate::problem::Problem;
use crate::solver::shrink::{ExactPasses, Offset, Rounds, SHRINK_WHEN, ShrinkParams};
use crate::solver::{
    Observer, SolveResult, SolverParams, StopReason, StopRule, YieldCheck, init, solve_from,
};
use std::time::Instant;

/// The exact g of α's points, in α's order (each from its owner). Collective.
fn gather_active(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    slice: &RowSlice,
    g: &[f64],
) -> Result<Vec<f64>> {
    let mut ga: Vec<f64> = alpha
        .indices()
        .iter()
        .map(|&j| {
            if slice.range().contains(&j) {
                g[j - slice.first]
            } else {
                0.0
            }
        })
        .collect();
    comm.sum(&mut ga)?;
    Ok(ga)
}

/// The `k` lowest (value, global index) over every rank's candidates `mine` (this rank's
/// entries outside the set, global indices), under value-then-index order: the same `k` one
/// process selects from all of them. Returns the chosen global indices that are this rank's.
/// Collective.
fn lowest(comm: &dyn Comm, mut mine: Vec<(f64, usize)>, k: usize) -> Result<Vec<usize>> {
    let order = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    // Only this rank's k lowest can be among the k lowest of all.
    if mine.len() > k && k > 0 {
        mine.select_nth_unstable_by(k - 1, order);
        mine.truncate(k);
    }
    let own: std::collections::HashSet<usize> = mine.iter().map(|c| c.1).collect();
    let write = |buf: &mut Vec<u8>| {
        for &(v, i) in &mine {
            buf.extend_from_slice(&v.to_le_bytes());
            buf.extend_from_slice(&(i as u64).to_le_bytes());
        }
    };
    let read = |buf: &[u8], all: &mut Vec<(f64, usize)>| {
        for c in buf.chunks_exact(16) {
            let v = f64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let i = u64::from_le_bytes(c[8..].try_into().expect("8 bytes")) as usize;
            all.push((v, i));
        }
        buf.len().is_multiple_of(16)
    };
    let mut all = super::comm::gather_parts(comm, "the lowest gradients", write, read)?;
    let k = k.min(all.len());
    if k == 0 {
        return Ok(Vec::new());
    }
    all.select_nth_unstable_by(k - 1, order);
    Ok(all[..k]
        .iter()
        .filter(|c| own.contains(&c.1))
        .map(|c| c.1)
        .collect())
}

/// [`crate::solver::shrink`]'s `grow` over ranks: adds to this rank's part of W its points of
/// supp α, its points with g_i < (1 + `margin`)·2f and its share of the lowest remaining g
/// while W is smaller than `min_size`. Returns how many joined over all ranks. Collective.
fn grow(
    comm: &dyn Comm,
    slice: &RowSlice,
    in_w: &mut [bool],
    g: &[f64],
    alpha: &ActiveSet,
    margin: f64,
    sp: &ShrinkParams,
) -> Result<usize> {
    let ga = gather_active(comm, alpha, slice, g)?;
    let two_f: f64 = alpha.iter().zip(&ga).map(|((_, a), gi)| a * gi).sum();
    let threshold = (1.0 + margin) * two_f;
    let mut added = 0;
    for &j in alpha.indices() {
        if slice.range().contains(&j) && !in_w[j - slice.first] {
            in_w[j - slice.first] = true;
            added += 1;
        }
    }
    for (i, &gi) in g.iter().enumerate() {
        if !in_w[i] && gi < threshold {
            in_w[i] = true;
            added += 1;
        }
    }
    let mut counts = [added as f64, in_w.iter().filter(|&&w| w).count() as f64];
    comm.sum(&mut counts)?;
    let (mut added, size) = (counts[0] as usize, counts[1] as usize);
    let want = sp.min_size.min(slice.total);
    if size < want {
        let k = want - size;
        let rest: Vec<(f64, usize)> = (0..g.len())
            .filter(|&i| !in_w[i])
            .map(|i| (g[i], slice.first + i))
            .collect();
        for j in lowest(comm, rest, k)? {
            in_w[j - slice.first] = true;
        }
        added += k;
    }
    Ok(added)
}

/// For every point of α, a number its owner knows (`value(local index)`), on every rank, in
/// α's order. Collective.
fn from_owners(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    slice: &RowSlice,
    value: impl Fn(usize) -> usize,
) -> Result<Vec<usize>> {
    let mut v: Vec<f64> = alpha
        .indices()
        .iter()
        .map(|&j| {
            if slice.range().contains(&j) {
                value(j - slice.first) as f64
            } else {
                0.0
            }
        })
        .collect();
    comm.sum(&mut v)?;
    Ok(v.into_iter().map(|x| x as usize).collect())
}

/// Runs `params.algorithm` (an FW variant or the CVM) by working-set rounds over the ranks:
/// this rank holds rows `slice` of the problem in `prob` and runs each round's local backend
/// on `device`; every rank must call it and gets the single-process result of
/// [`crate::solver::shrink::solve`] (to the bit on the CPU with f64 columns).
#[allow(clippy::too_many_arguments)]
pub fn solve(
    comm: &dyn Comm,
    prob: &Problem<'_>,
    slice: RowSlice,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    partial_sums: bool,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    params.check()?;
    let start = Instant::now();
    let (m, n_own) = (slice.total, slice.rows);
    let mut known = Known::new(comm, prob, slice)?;
    let kappa = meb_kappa(&mut known, prob, params.stop)?;
    let (alpha, mut g) = initial_point(&mut known, m, params)?;
    let mut in_w = vec![false; n_own];
    grow(comm, &slice, &mut in_w, &g, &alpha, sp.margin, sp)?;
    let mut pinned = vec![false; n_own];
    let mut run = Rounds::new(alpha, m, start);
    loop {
        // This rank's rows in W, and where they stand among W's rows of all ranks.
        let rows: Vec<usize> = (0..n_own).filter(|&i| in_w[i]).collect();
        let round = round_slice(comm, rows.len())?;
        let n = round.total;
        run.stats.round(n);
        let sub;
        let sub_prob;
        // The round's problem: W's rows (the whole problem when W is everything, as in one
        // process), their repeats grouped when one process would group W's.
        let round_prob = if n == m {
            prob
        } else {
            sub = prob.data.subset(&rows);
            let group = super::backend::grouping_over_ranks(comm, &sub)?;
            sub_prob = prob.restricted(&sub, &rows)?.with_distinct_rows(group);
            &sub_prob
        };
        let start_w = round_alpha(comm, &run.alpha, (&slice, &round), &rows)?;
        let start_g: Vec<f64> = rows.iter().map(|&i| g[i]).collect();
        let elapsed = run.start.elapsed();
        let round_params = run.round_params(params, elapsed);
        let mut gw: Vec<f64> = Vec::new();
        let mut smaller: Option<Vec<bool>> = None;
        let mut check = shrink_check(
            comm,
            (&rows, &pinned, round),
            params,
            sp,
            &mut gw,
            &mut smaller,
        );
        let r = {
            let local = device.backend(round_prob, cpu)?;
            let mut be =
                DistBackend::new(comm, round_prob, local, round)?.with_partial_sums(partial_sums);
            let mut off = Offset {
                inner: &mut *observers,
                iter: run.iterations,
                seconds: elapsed.as_secs_f64(),
            };
            let mut obs: [&mut dyn Observer; 1] = [&mut off];
            solve_from(
                round_prob,
                &mut be,
                &round_params,
                &mut obs,
                Some((start_w, Some(start_g))),
                Some(YieldCheck {
                    every: crate::solver::shrink::check_every(params.algorithm),
                    check: &mut check,
                }),
            )?
        };
        drop(check);
        // Back to global numbering: each round point's owner knows its row.
        let global = from_owners(comm, &r.alpha, &round, |k| slice.first + rows[k])?;
        run.took(&r, |p, _| global[p]);
        if r.stop == StopReason::Yielded {
            in_w = run.shrunk(&mut g, &rows, &gw, smaller.take());
            continue;
        }
        if let Some(result) = run.close(&mut known, &mut g, &r, params, kappa, observers)? {
            return Ok(result);
        }
        regrow(comm, &slice, (&mut in_w, &mut pinned), &g, &mut run, sp)?;
    }
}

/// κ = Q_ii for the MEB rule (0 for the gap rule), read from point 0's owner. Collective.
fn meb_kappa(known: &mut Known<'_>, prob: &Problem<'_>, stop: StopRule) -> Result<f64> {
    Ok(match stop {
        StopRule::Gap => 0.0,
        StopRule::Meb => {
            crate::solver::check_meb_kernel(prob)?;
            known.fetch(&[0])?;
            known.q_diag(0)
        }
    })
}

/// After a round that ran to its stop rule without the whole problem's certificate: W gains
/// the points whose exact gradient is below the rebuild margin, pinned from now on, and the
/// count of rounds that added none goes on. Collective.
fn regrow(
    comm: &dyn Comm,
    slice: &RowSlice,
    (in_w, pinned): (&mut Vec<bool>, &mut Vec<bool>),
    g: &[f64],
    run: &mut Rounds,
    sp: &ShrinkParams,
) -> Result<()> {
    let before = in_w.clone();
    let added = grow(
        comm,
        slice,
        in_w,
        g,
        &run.alpha,
        crate::solver::shrink::REBUILD_MARGIN,
        sp,
    )?;
    crate::solver::shrink::pin_added(&before, in_w, pinned);
    run.idle = if added == 0 { run.idle + 1 } else { 0 };
    Ok(())
}

/// The initial α (the single-process vertex choice over the ranks' rows) and its exact
/// gradient on this rank's rows. Collective.
fn initial_point(
    known: &mut Known<'_>,
    m: usize,
    params: &SolverParams,
) -> Result<(ActiveSet, Vec<f64>)> {
    known.fetch(&init::sample(m, params.init_size, params.seed))?;
    let alpha = init::initial_alpha_by(m, params.init_size, params.seed, params.eps, &|i, j| {
        known.q(i, j)
    });
    let g = known.exact_gradient(&alpha, None)?;
    Ok((alpha, g))
}

/// This rank's `rows` of a round's W as a slice of W's rows over all ranks. Collective.
fn round_slice(comm: &dyn Comm, rows: usize) -> Result<RowSlice> {
    let counts = comm.gather_all(rows as u64)?;
    Ok(RowSlice {
        first: counts[..comm.rank()].iter().map(|&c| c as usize).sum(),
        rows,
        total: counts.iter().map(|&c| c as usize).sum(),
    })
}

/// α in the round's numbering (each point's owner knows its place in W: its `rows`, slice
/// `round` of W). Collective.
fn round_alpha(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    (slice, round): (&RowSlice, &RowSlice),
    rows: &[usize],
) -> Result<ActiveSet> {
    let mut pos = vec![usize::MAX; slice.rows];
    for (k, &i) in rows.iter().enumerate() {
        pos[i] = round.first + k;
    }
    let at = from_owners(comm, alpha, slice, |i| pos[i])?;
    let mut start_w = ActiveSet::new(round.total);
    for ((_, a), &k) in alpha.iter().zip(&at) {
        start_w.set(k, a);
    }
    Ok(start_w)
}

/// The rounds' yield check over the ranks, as one process's (`solver::shrink`): once the gap
/// is within [`CLOSE`](crate::solver::shrink::CLOSE) times the stop rule's, each rank gathers its rows of W's gradient into
/// `gw`, and the ranks agree on the smaller W (this rank's marks left in `smaller`) when the
/// rule keeps at most [`SHRINK_WHEN`] of W. Collective.
fn shrink_check<'c>(
    comm: &'c dyn Comm,
    (rows, pinned, round): (&'c [usize], &'c [bool], RowSlice),
    params: &'c SolverParams,
    sp: &'c ShrinkParams,
    gw: &'c mut Vec<f64>,
    smaller: &'c mut Option<Vec<bool>>,
) -> impl FnMut(&crate::solver::State, &crate::backend::Reduction, &mut dyn Backend) -> Result<bool> + 'c
{
    let (n, n_own) = (round.total, pinned.len());
    move |state, red, be| {
        if !crate::solver::shrink::worth_checking(n, sp, params, red) {
            return Ok(false);
        }
        be.gather_own(gw)?;
        let threshold = (1.0 + sp.margin) * red.alpha_g;
        let keep = |k: usize| {
            gw[k] < threshold || state.alpha.contains(round.first + k) || pinned[rows[k]]
        };
        let mut kept = [(0..rows.len()).filter(|&k| keep(k)).count() as f64];
        comm.sum(&mut kept)?;
        let kept = kept[0] as usize;
        if (kept.max(sp.min_size) as f64) > SHRINK_WHEN * n as f64 {
            return Ok(false);
        }
        let mut mask = vec![false; n_own];
        for k in 0..rows.len() {
            if keep(k) {
                mask[rows[k]] = true;
            }
        }
        let missing = sp.min_size.saturating_sub(kept);
        if missing > 0 {
            let rest: Vec<(f64, usize)> = (0..rows.len())
                .filter(|&k| !keep(k))
                .map(|k| (gw[k], round.first + k))
                .collect();
            for j in lowest(comm, rest, missing)? {
                mask[rows[j - round.first]] = true;
            }
        }
        *smaller = Some(mask);
        Ok(true)
    }
}

impl ExactPasses for Known<'_> {
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<(f64, f64)> {
        Known::certify(self, alpha, g)
    }
}
