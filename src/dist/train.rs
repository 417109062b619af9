//! Training one binary model over the ranks of a job: every rank holds its slice of the rows,
//! the solver runs on every rank over a [`DistBackend`], and the model — the support vectors'
//! rows gathered from their ranks — is the one `train::train` builds in one process, to the
//! bit with f64 columns.

use super::backend::DistBackend;
use super::comm::Comm;
use super::exchange::exchange_rows;
use super::slice::RowSlice;
use crate::backend::Device;
use crate::backend::sampled::Sampled;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::model::Model;
use crate::solver::{Algorithm, Observer, SolveResult, solve, solve_plain};
use crate::train::{GAMMA_PAIRS, Gamma, TrainParams};

/// The classes in order of first appearance over all ranks (rank 0's rows first), with
/// LIBSVM's rule that a {−1, +1} problem lists +1 first ([`crate::train::class_order`]).
pub fn class_order(comm: &dyn Comm, local: &Dataset) -> Result<Vec<f64>> {
    let mut all: Vec<f64> = Vec::new();
    for c in super::comm::all_gather(comm, &local.classes())? {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    if all.len() == 2 && all[0] == -1.0 && all[1] == 1.0 {
        all.swap(0, 1);
    }
    Ok(all)
}

/// γ of `--gamma auto` over all ranks: the same pairs of rows as one process draws
/// ([`crate::kernel::gamma_heuristic`]), the rows fetched from their ranks (one broadcast per
/// rank), the same sum.
pub fn gamma_heuristic(
    comm: &dyn Comm,
    local: &Dataset,
    slice: &RowSlice,
    starts: &[usize],
    seed: u64,
) -> Result<f64> {
    let m = slice.total;
    let d = local.n_features().max(1);
    if m < 2 {
        return Ok(1.0 / d as f64);
    }
    let pairs = crate::kernel::heuristic_pairs(m, GAMMA_PAIRS, seed);
    let mut want: Vec<usize> = pairs.iter().flat_map(|&(i, j)| [i, j]).collect();
    want.sort_unstable();
    want.dedup();
    let rows = exchange_rows(comm, local, slice.first, starts, &want, &|_| [0.0; 2])?;
    let row = |j: usize| {
        let k = want.binary_search(&j).unwrap_or(0);
        rows[k].0.as_row()
    };
    Ok(crate::kernel::gamma_from_pairs(
        pairs.iter().map(|&(i, j)| (row(i), row(j))),
        GAMMA_PAIRS,
        d,
    ))
}

/// Trains the model of the rows every rank holds a slice of (`local`, global rows `slice`)
/// with `params` on this rank's CPU: the binary problem, or one-versus-one with each class pair
/// trained over all ranks on the pair's rows (a pair's rows stay where they are, so no data
/// moves and every rank works on every pair); every rank must call it, and every rank returns
/// the same model and the pairs' results. FW variants and the CVM, with full gradients or
/// sampled iterations ([`super::blocks`]: their kernel blocks on each rank's CPU), with
/// working-set shrinking where one process would shrink ([`super::shrink`]); each rank's
/// columns on `params.device` (its CPU or its own GPU); one-class training (`params.one_class`)
/// as [`crate::train::train`] does it; sample weights (`params.sample_weights`, one per row
/// of all ranks in global order) on the CPU.
pub fn train_model(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    params: &TrainParams,
    observers: &mut [&mut dyn Observer],
) -> Result<(Model, Vec<SolveResult>)> {
    train_model_observed(comm, local, slice, params, observers, &mut |_| Vec::new())
}

/// The observers of one class pair (or of the one problem), made when it starts.
pub type PairObservers<'f> = &'f mut dyn FnMut(&crate::train::PairInfo) -> Vec<Box<dyn Observer>>;

/// [`train_model`] with, besides `observers` (every problem's), the observers `per_pair`
/// makes for each class pair as it starts (as [`crate::train::train`] takes them: a
/// multi-class trace tells the pairs apart by them). Collective.
pub fn train_model_observed(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    params: &TrainParams,
    observers: &mut [&mut dyn Observer],
    per_pair: PairObservers<'_>,
) -> Result<(Model, Vec<SolveResult>)> {
    let params = params.check()?;
    let alg = params.solver.algorithm();
    let own_weights = rank_weights(&params, slice)?;
    if params.one_class {
        let info = crate::train::PairInfo {
            index: 0,
            count: 1,
            classes: (1.0, -1.0),
            m: slice.total,
        };
        let mut mine = per_pair(&info);
        let mut obs = with_pair_observers(observers, &mut mine);
        return one_class(comm, local, slice, &params, own_weights, &mut obs);
    }
    let labels = class_order(comm, local)?;
    if labels.len() < 2 {
        return Err(Error::param(format!(
            "the training data have one class ({}); at least two are needed",
            labels.first().copied().unwrap_or(f64::NAN)
        )));
    }
    let kernel = kernel_over_ranks(comm, local, &slice, &params)?;
    let k = labels.len();
    let class_of = |l: f64| labels.iter().position(|&c| c == l).unwrap_or(0);
    // Per class, its support vectors by global row: (row, coefficients against the others).
    let mut coef: crate::train::SvCoefficients<crate::data::OwnedRow> =
        crate::train::SvCoefficients::new(k);
    let (mut rho, mut results) = (Vec::new(), Vec::new());
    for a in 0..k {
        for b in a + 1..k {
            let (rows, sub, pair_slice) = pair_rows(comm, local, slice, &class_of, (a, b), k)?;
            let data = sub.as_ref().unwrap_or(local);
            let y: Vec<f64> = data
                .labels
                .iter()
                .map(|&l| if class_of(l) == a { 1.0 } else { -1.0 })
                .collect();
            let weights: Option<Vec<f64>> = own_weights.as_ref().map(|w| {
                if k == 2 {
                    w.clone()
                } else {
                    rows.iter().map(|&i| w[i]).collect()
                }
            });
            // Repeated points merged over all ranks where one process merges them.
            let merged = if params.merges_duplicates() {
                super::merge::merge_over_ranks(comm, data, &y, weights.as_deref())?
            } else {
                None
            };
            let (kept, msub, y, weights, pair_slice) = match merged {
                Some(g) => {
                    let y = g.rows.iter().map(|&i| y[i]).collect();
                    let sub = data.subset(&g.rows);
                    (g.rows, Some(sub), y, Some(g.weights), g.slice)
                }
                None => ((0..data.len()).collect(), None, y, weights, pair_slice),
            };
            let data = msub.as_ref().unwrap_or(data);
            // Repeated rows grouped on every rank exactly when one process would group them.
            // Rows laid out on each rank's CPU as one process lays out all of them.
            let group = super::backend::grouping_over_ranks(comm, data)?;
            let layout = super::known::layout_over_ranks(comm, data, group)?;
            let mut prob = alg
                .problem(data, y, kernel, params.c)?
                .with_class_weights(
                    params.class_weight_of(labels[a]),
                    params.class_weight_of(labels[b]),
                )?
                .with_distinct_rows(group)
                .with_layout_stats(layout);
            if let Some(w) = weights {
                prob = prob.with_row_weights(w)?;
            }
            let info = crate::train::PairInfo {
                index: results.len(),
                count: k * (k - 1) / 2,
                classes: (labels[a], labels[b]),
                m: pair_slice.total,
            };
            let mut mine = per_pair(&info);
            let mut obs = with_pair_observers(observers, &mut mine);
            let result = solve_over_ranks(comm, &prob, pair_slice, &params, &mut obs)?;
            // The support vectors' rows, labels and global rows, from their ranks.
            let pair_firsts = comm.gather_all(pair_slice.first as u64)?;
            let mut pair_starts: Vec<usize> = pair_firsts.iter().map(|&f| f as usize).collect();
            pair_starts.push(pair_slice.total);
            let sv: Vec<usize> = result.alpha.indices().to_vec();
            let global = |i: usize| {
                let i = kept[i];
                (slice.first + if k == 2 { i } else { rows[i] }) as f64
            };
            let got = exchange_rows(comm, data, pair_slice.first, &pair_starts, &sv, &|i| {
                [prob.y[i], global(i)]
            })?;
            let mut r = 0.0;
            for (t, (j, al)) in result.alpha.iter().enumerate() {
                debug_assert_eq!(sv[t], j);
                let (row, [yi, gi]) = &got[t];
                r -= al * yi;
                let c = if *yi > 0.0 { a } else { b };
                let other = if c == a { b } else { a };
                coef.set(c, other, *gi as usize, al * yi, || row.clone());
            }
            rho.push(result.rho.unwrap_or(r));
            results.push(result);
        }
    }
    // The model as train::train builds it: SVs by class in label order, each class's by row.
    let model = coef.into_model(kernel, labels, rho, |_, rows, y| {
        let rows: Vec<&crate::data::OwnedRow> = rows.iter().collect();
        local.subset(&[]).with_rows(&rows, &y)
    });
    Ok((model, results))
}

/// This rank's sample weights (of its rows), checked against the rows of all ranks.
fn rank_weights(params: &TrainParams, slice: RowSlice) -> Result<Option<Vec<f64>>> {
    // Sample weights: one per row of every rank (global order); this rank keeps its own.
    Ok(match &params.sample_weights {
        None => None,
        Some(w) if w.len() != slice.total => {
            return Err(crate::error::ParamError::Length {
                what: "sample weights",
                got: w.len(),
                rows: slice.total,
            }
            .into());
        }
        Some(w) => Some(w[slice.range()].to_vec()),
    })
}

/// Class pair (a, b)'s rows on this rank, as a dataset of their own when there are more than
/// two classes (`None`: all of `local`), and where they stand among the pair's rows of all
/// ranks (the numbering one process gives the pair's sub-problem). Collective.
fn pair_rows(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    class_of: &dyn Fn(f64) -> usize,
    (a, b): (usize, usize),
    k: usize,
) -> Result<(Vec<usize>, Option<Dataset>, RowSlice)> {
    let rows: Vec<usize> = (0..local.len())
        .filter(|&i| matches!(class_of(local.labels[i]), c if c == a || c == b))
        .collect();
    if k == 2 {
        return Ok((rows, None, slice));
    }
    let counts = comm.gather_all(rows.len() as u64)?;
    let first: usize = counts[..comm.rank()].iter().map(|&c| c as usize).sum();
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let pair_slice = RowSlice {
        first,
        rows: rows.len(),
        total,
    };
    let sub = local.subset(&rows);
    Ok((rows, Some(sub), pair_slice))
}

/// Every problem's observers followed by one pair's own.
fn with_pair_observers<'o>(
    all: &'o mut [&mut dyn Observer],
    pair: &'o mut [Box<dyn Observer>],
) -> Vec<&'o mut dyn Observer> {
    let mut v: Vec<&'o mut dyn Observer> = Vec::with_capacity(all.len() + pair.len());
    for o in all.iter_mut() {
        v.push(&mut **o);
    }
    for o in pair.iter_mut() {
        v.push(o.as_mut());
    }
    v
}

/// The kernel of `params` with γ auto resolved over every rank's rows (as one process resolves
/// it on all of them). Collective.
fn kernel_over_ranks(
    comm: &dyn Comm,
    local: &Dataset,
    slice: &RowSlice,
    params: &TrainParams,
) -> Result<Kernel> {
    match params.gamma {
        Gamma::Value(_) => params.resolve_kernel(local),
        Gamma::Auto => {
            let firsts = comm.gather_all(slice.first as u64)?;
            let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
            starts.push(slice.total);
            let g = gamma_heuristic(comm, local, slice, &starts, params.solver.seed)?;
            params
                .with_gamma_of(&Kernel::Rbf { gamma: g })
                .resolve_kernel(local)
        }
    }
}

/// Solves `prob` (this rank's rows `slice` of it) over the ranks as one process solves it
/// ([`crate::train`]'s choice): working-set rounds where one process would shrink, sampled
/// iterations with `--sample`, else the full-gradient loop, each rank's columns on
/// `params.device`. Collective.
fn solve_over_ranks(
    comm: &dyn Comm,
    prob: &crate::problem::Problem<'_>,
    slice: RowSlice,
    params: &TrainParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    // By rounds where one process takes them (the working-set solver from fewer points).
    let shrinking = params.sample == 0
        && params
            .shrink
            .is_some_and(|sp| sp.applies(params.solver.algorithm(), slice.total));
    if shrinking {
        let sp = params.shrink.unwrap_or_default();
        return super::shrink::solve(
            comm,
            prob,
            slice,
            &params.device,
            params.cpu,
            &params.solver,
            &sp,
            params.partial_sums,
            observers,
        );
    }
    if params.solver.algorithm() == Algorithm::SimpleSvm {
        // Every point's label and box on every rank (SimpleSVM's α, status and queue are
        // replicated), and τ's diagonal sample from its owners, folded as one process does.
        let y = super::comm::all_gather(comm, &prob.y)?;
        let c = prob.box_c.unwrap_or(params.c);
        let own_costs: Vec<f64> = (0..prob.len()).map(|i| c * prob.cost_factor(i)).collect();
        let cost = super::comm::all_gather(comm, &own_costs)?;
        let sample = slice.total.min(crate::solver::simple_svm::DIAG_SAMPLE);
        let mut diag = vec![0.0; sample];
        for j in slice.range().take_while(|&j| j < sample) {
            let i = j - slice.first;
            diag[j] = prob.k(i, i);
        }
        comm.sum(&mut diag)?;
        let max_diag = diag.iter().copied().fold(1.0, f64::max);
        let be = params.device.backend(prob, params.cpu)?;
        let mut dist =
            DistBackend::new(comm, prob, be, slice)?.with_partial_sums(params.partial_sums);
        return crate::solver::solve_simple_with(
            prob,
            &mut dist,
            &params.solver,
            observers,
            (y, cost, max_diag),
        );
    }
    if params.sample == 0 && crate::solver::warm::applies(&params.solver, slice.total) {
        // Warm-started as one process starts where it does not shrink.
        return super::shrink::solve_warm_started(
            comm,
            prob,
            slice,
            &params.device,
            params.cpu,
            &params.solver,
            &params.shrink.unwrap_or_default(),
            params.partial_sums,
            observers,
        );
    }
    if params.sample > 0 {
        let blocks = super::blocks::DistBlocks::new(comm, prob, slice)?;
        let mut be = Sampled::with_engine(params.sampled_config(), Box::new(blocks));
        return solve_plain(prob, &mut be, &params.solver, observers);
    }
    let be = params.device.backend(prob, params.cpu)?;
    let mut dist = DistBackend::new(comm, prob, be, slice)?.with_partial_sums(params.partial_sums);
    solve(prob, &mut dist, &params.solver, observers)
}

/// One-class training over the ranks (LIBSVM's `-s 2`, [`crate::train::train_one_class`]'s
/// model): every label +1, the ball solved over all ranks, the support vectors gathered by
/// row, ρ = 2f − 1 from the certified f. Collective.
fn one_class(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    params: &TrainParams,
    weights: Option<Vec<f64>>,
    observers: &mut [&mut dyn Observer],
) -> Result<(Model, Vec<SolveResult>)> {
    let kernel = kernel_over_ranks(comm, local, &slice, params)?;
    if !matches!(kernel, Kernel::Rbf { .. }) {
        return Err(crate::error::ParamError::Kernel {
            option: "one-class training",
            needs: "the rbf kernel (its ball test needs k(x, x) constant)",
            kernel: kernel.libsvm_name(),
        }
        .into());
    }
    let group = super::backend::grouping_over_ranks(comm, local)?;
    let layout = super::known::layout_over_ranks(comm, local, group)?;
    let mut prob = crate::problem::Problem::new(local, vec![1.0; local.len()], kernel, params.c)?
        .with_distinct_rows(group)
        .with_layout_stats(layout);
    if let Some(w) = weights {
        prob = prob.with_row_weights(w)?;
    }
    let result = solve_over_ranks(comm, &prob, slice, params, observers)?;
    let f = result.certified_f.unwrap_or(result.f);
    let mut sv: Vec<(usize, f64)> = result.alpha.iter().collect();
    sv.sort_unstable_by_key(|&(i, _)| i);
    let rows: Vec<usize> = sv.iter().map(|&(i, _)| i).collect();
    let firsts = comm.gather_all(slice.first as u64)?;
    let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
    starts.push(slice.total);
    let got = exchange_rows(comm, local, slice.first, &starts, &rows, &|_| [0.0; 2])?;
    let sv_rows: Vec<&crate::data::OwnedRow> = got.iter().map(|(r, _)| r).collect();
    let sv_data = local
        .subset(&[])
        .with_rows(&sv_rows, &vec![1.0; rows.len()]);
    let model = Model::one_class(kernel, &sv, sv_data, f);
    Ok((model, vec![result]))
}

/// Every rank's labels, in row order (one broadcast per rank).
fn all_labels(comm: &dyn Comm, local: &Dataset) -> Result<Vec<f64>> {
    super::comm::all_gather(comm, &local.labels)
}

/// One fold of a distributed cross-validation: rows held out, how many of them were predicted
/// right, and the fold's class pairs' results.
pub type FoldResult = (usize, usize, Vec<SolveResult>);

/// Stratified `k`-fold cross-validation over the ranks, as [`crate::train::cross_validate`]
/// does it in one process: the same folds (drawn from every rank's labels), γ resolved once on
/// all rows, each fold's model trained over all ranks on their rows outside the fold
/// ([`train_model`]), and each rank predicting its own held-out rows. Returns the folds in
/// order; every rank must call it and gets the same numbers.
pub fn cross_validate(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    params: &TrainParams,
    k: usize,
    seed: u64,
) -> Result<Vec<FoldResult>> {
    let params = &params.resolved();
    params.check()?;
    let m = slice.total;
    if k < 2 || k > m {
        return Err(Error::param(format!(
            "cross-validation needs 2 ≤ K folds ≤ the number of rows ({m}), got {k}"
        )));
    }
    let labels = all_labels(comm, local)?;
    let params = match params.gamma {
        Gamma::Value(_) => params.clone(),
        Gamma::Auto => {
            let firsts = comm.gather_all(slice.first as u64)?;
            let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
            starts.push(m);
            let g = gamma_heuristic(comm, local, &slice, &starts, params.solver.seed)?;
            params.with_gamma_of(&Kernel::Rbf { gamma: g })
        }
    };
    let fold = crate::train::stratified_folds(&labels, k, seed);
    let mut out = Vec::with_capacity(k);
    for f in 0..k {
        if crate::interrupt::requested() {
            return Err(Error::Interrupted(format!(
                "cross-validation stopped after {f} of {k} folds; no accuracy reported"
            )));
        }
        let train_labels: Vec<f64> = (0..m)
            .filter(|&i| fold[i] != f)
            .map(|i| labels[i])
            .collect();
        let mut classes: Vec<f64> = Vec::new();
        for l in train_labels {
            if !classes.contains(&l) {
                classes.push(l);
            }
        }
        if classes.len() < 2 {
            return Err(Error::param(format!(
                "fold {} of {k} leaves a single class to train on; use fewer folds",
                f + 1
            )));
        }
        let own = |held: bool| -> Vec<usize> {
            (0..local.len())
                .filter(|&i| (fold[slice.first + i] == f) == held)
                .collect()
        };
        let (train_rows, test_rows) = (own(false), own(true));
        let tr = local.subset(&train_rows);
        let counts = comm.gather_all(train_rows.len() as u64)?;
        let fold_slice = RowSlice {
            first: counts[..comm.rank()].iter().map(|&c| c as usize).sum(),
            rows: train_rows.len(),
            total: counts.iter().map(|&c| c as usize).sum(),
        };
        // Sample weights of the fold's training rows, in global order.
        let fold_params = match &params.sample_weights {
            None => params.clone(),
            Some(_) => {
                let rows: Vec<usize> = (0..m).filter(|&i| fold[i] != f).collect();
                params.for_rows(&rows)
            }
        };
        let (model, results) = train_model(comm, &tr, fold_slice, &fold_params, &mut [])?;
        let te = local.subset(&test_rows);
        let mut right = [0.0];
        if !te.is_empty() {
            let pred = crate::predict::labels_on_device(
                &Device::Cpu,
                &model,
                &te,
                crate::backend::GPU_PREDICT_MIN_WORK,
                None,
            )?;
            right[0] = pred.iter().zip(&te.labels).filter(|(p, y)| p == y).count() as f64;
        }
        comm.sum(&mut right)?;
        let held = fold.iter().filter(|&&g| g == f).count();
        out.push((held, right[0] as usize, results));
    }
    Ok(out)
}

/// One fold of a cross-validation: rows held out, how many were predicted right, iterations
/// of its trainings.
pub type FoldCount = (usize, usize, u64);

/// The `k`-fold cross-validations of `points` (one set of settings each) with their folds
/// dealt to the ranks whole — task t = point·k + fold goes to rank t mod P — on `all`, every
/// row on every rank ([`super::plan::gather_dataset`]): each task is the single-process fold
/// ([`crate::train::cross_validate_folds`]: the same folds, γ and arithmetic), and one `sum`
/// hands every rank every fold's counts. Collective; an error on any rank ends every rank.
pub fn cross_validate_tasks(
    comm: &dyn Comm,
    all: &Dataset,
    points: &[TrainParams],
    k: usize,
    seed: u64,
) -> Result<Vec<Vec<FoldCount>>> {
    let (rank, size) = (comm.rank(), comm.size());
    let mine = |q: usize, f: usize| (q * k + f) % size == rank;
    let mut counts = vec![0.0; points.len() * k * 3];
    let ran: Result<()> = (|| {
        for (q, params) in points.iter().enumerate() {
            if !(0..k).any(|f| mine(q, f)) {
                continue;
            }
            let r = crate::train::cross_validate_folds(
                all,
                &params.resolved(),
                k,
                seed,
                &mut |_, _| Vec::new(),
                &|f| mine(q, f),
            )?;
            for (f, (held, right, reports)) in r.folds.iter().enumerate() {
                if mine(q, f) {
                    let at = (q * k + f) * 3;
                    counts[at] = *held as f64;
                    counts[at + 1] = *right as f64;
                    counts[at + 2] =
                        reports.iter().map(|p| p.result.iterations).sum::<u64>() as f64;
                }
            }
        }
        Ok(())
    })();
    super::comm::agree(comm, ran)?;
    comm.sum(&mut counts)?;
    Ok(counts
        .chunks(k * 3)
        .map(|p| {
            p.chunks(3)
                .map(|c| (c[0] as usize, c[1] as usize, c[2] as u64))
                .collect()
        })
        .collect())
}

/// A one-versus-one model with its class pairs dealt to the ranks whole — pair p to rank
/// p mod P — on `all`, every row on every rank ([`super::plan::gather_dataset`]): each pair is
/// the single-process pair ([`crate::train::train_dealt`]), and the pairs' support vectors,
/// biases and reports travel to every rank (one broadcast per rank), so every rank builds the
/// model one process builds. The reports' backend counters and working-set statistics stay
/// on the rank that trained the pair. Collective; an error on any rank ends every rank.
pub fn train_pairs_dealt(
    comm: &dyn Comm,
    all: &Dataset,
    params: &TrainParams,
) -> Result<(Model, Vec<crate::train::PairReport>)> {
    train_pairs_dealt_observed(comm, all, params, &mut |_| Vec::new())
}

/// [`train_pairs_dealt`] with the observers `per_pair` makes for each of this rank's pairs as
/// it starts. Collective.
pub fn train_pairs_dealt_observed(
    comm: &dyn Comm,
    all: &Dataset,
    params: &TrainParams,
    per_pair: PairObservers<'_>,
) -> Result<(Model, Vec<crate::train::PairReport>)> {
    let params = &params.resolved();
    let (rank, size) = (comm.rank(), comm.size());
    let share =
        |own: Result<Vec<crate::train::PairOutcome>>| -> Result<Vec<crate::train::PairOutcome>> {
            let own = super::comm::agree(comm, own)?;
            let write = |buf: &mut Vec<u8>| own.iter().for_each(|p| write_outcome(p, buf));
            let read = |buf: &[u8], out: &mut Vec<crate::train::PairOutcome>| {
                let mut at = 0;
                while at < buf.len() {
                    match read_outcome(buf, &mut at) {
                        Some(p) => out.push(p),
                        None => return false,
                    }
                }
                true
            };
            super::comm::gather_parts(comm, "the class pairs", write, read)
        };
    // Every rank reaches the exchange (an error in its own pairs included), so after it the
    // ranks agree; what can fail later (the model's assembly) fails alike everywhere.
    crate::train::train_dealt(all, params, per_pair, &|p| p % size == rank, &mut { share })
}

fn put(buf: &mut Vec<u8>, v: f64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn take(buf: &[u8], at: &mut usize) -> Option<f64> {
    let v = f64::from_le_bytes(buf.get(*at..*at + 8)?.try_into().ok()?);
    *at += 8;
    Some(v)
}

fn stop_code(s: crate::solver::StopReason) -> f64 {
    use crate::solver::StopReason::*;
    match s {
        Converged => 0.0,
        MaxIter => 1.0,
        TimeLimit => 2.0,
        Stalled => 3.0,
        Interrupted => 4.0,
        Yielded => 5.0,
    }
}

fn stop_of(c: f64) -> Option<crate::solver::StopReason> {
    use crate::solver::StopReason::*;
    [Converged, MaxIter, TimeLimit, Stalled, Interrupted, Yielded]
        .get(c as usize)
        .copied()
}

/// A pair's outcome as numbers: index, ρ, SVs, then its report (classes, m, α, and the
/// solver's figures; None as NaN).
fn write_outcome(p: &crate::train::PairOutcome, buf: &mut Vec<u8>) {
    let r = &p.report.result;
    let opt = |v: Option<f64>| v.unwrap_or(f64::NAN);
    for v in [p.index as f64, p.rho, p.svs.len() as f64] {
        put(buf, v);
    }
    for &(gi, c) in &p.svs {
        put(buf, gi as f64);
        put(buf, c);
    }
    for v in [
        p.report.classes.0,
        p.report.classes.1,
        p.report.m as f64,
        r.alpha.len() as f64,
    ] {
        put(buf, v);
    }
    for (i, a) in r.alpha.iter() {
        put(buf, i as f64);
        put(buf, a);
    }
    for v in [
        r.iterations as f64,
        r.f,
        r.gap,
        opt(r.certified_f),
        opt(r.certified_gap),
        stop_code(r.stop),
        r.seconds,
        r.certify_seconds,
        opt(r.rho),
    ] {
        put(buf, v);
    }
}

fn read_outcome(buf: &[u8], at: &mut usize) -> Option<crate::train::PairOutcome> {
    let some = |v: f64| (!v.is_nan()).then_some(v);
    let index = take(buf, at)? as usize;
    let rho = take(buf, at)?;
    let n = take(buf, at)? as usize;
    let mut svs = Vec::with_capacity(n.min(buf.len() / 16));
    for _ in 0..n {
        svs.push((take(buf, at)? as usize, take(buf, at)?));
    }
    let classes = (take(buf, at)?, take(buf, at)?);
    let m = take(buf, at)? as usize;
    let na = take(buf, at)? as usize;
    let mut alpha = crate::active::ActiveSet::new(m);
    for _ in 0..na {
        let i = take(buf, at)? as usize;
        let a = take(buf, at)?;
        if i >= m {
            return None;
        }
        alpha.set(i, a);
    }
    let iterations = take(buf, at)? as u64;
    let (f, gap) = (take(buf, at)?, take(buf, at)?);
    let (certified_f, certified_gap) = (some(take(buf, at)?), some(take(buf, at)?));
    let stop = stop_of(take(buf, at)?)?;
    let (seconds, certify_seconds) = (take(buf, at)?, take(buf, at)?);
    let r = some(take(buf, at)?);
    Some(crate::train::PairOutcome {
        index,
        rho,
        svs,
        report: crate::train::PairReport {
            classes,
            m,
            merged: None,
            result: SolveResult {
                warm: None,
                alpha,
                iterations,
                f,
                gap,
                certified_f,
                certified_gap,
                stop,
                seconds,
                certify_seconds,
                stats: Default::default(),
                shrink: None,
                rho: r,
                gradient: None,
            },
        },
    })
}
