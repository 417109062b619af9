//! What trains on folds of the data: the probabilities' internal cross-validation (Platt's
//! sigmoid per class pair, as LIBSVM's `-b 1`) and `-v K` cross-validation.

use super::*;

/// Folds of the internal cross-validation behind probabilities (LIBSVM's).
pub const PROBABILITY_FOLDS: usize = 5;

/// Gives `model` (trained on `ds` with `params`) Platt's sigmoid for every class pair, as
/// LIBSVM's `-b 1`: the pair's points are shuffled (seeded by the solver's seed) and cut into
/// [`PROBABILITY_FOLDS`] folds; each fold's decision values come from a model trained with
/// the same settings on the other folds (a fold whose training part holds one class gets
/// ±1, none 0, as in LIBSVM); [`crate::probability::sigmoid_train`] fits (A, B) to them. γ is
/// the model's. On a GPU the data are uploaded once and every fold binds its rows.
pub fn add_probabilities(ds: &Dataset, params: &TrainParams, model: &mut Model) -> Result<()> {
    add_probabilities_dealt(ds, params, model, &|_| true)
}

/// [`add_probabilities`] fitting only the class pairs `mine(pair index)` picks (the others'
/// A and B are left 0; every pair's fold shuffle is still drawn, so each pair gets the folds
/// one process gives it): a distributed run deals the pairs to ranks and adds up A and B.
pub fn add_probabilities_dealt(
    ds: &Dataset,
    params: &TrainParams,
    model: &mut Model,
    mine: &dyn Fn(usize) -> bool,
) -> Result<()> {
    let params = params.with_gamma_of(&model.kernel);
    let shared = if params.sample > 0 {
        params.device.clone()
    } else {
        params.device.share_once(ds)?
    };
    let mut rng = crate::rng::SplitMix64::new(params.solver.seed ^ 0x5DEE_CE66_D1CE_4E5B);
    let k = model.n_classes();
    let (mut prob_a, mut prob_b) = (Vec::new(), Vec::new());
    for i in 0..k {
        for j in i + 1..k {
            let (li, lj) = (model.labels[i], model.labels[j]);
            let rows: Vec<usize> = (0..ds.len())
                .filter(|&r| ds.labels[r] == li || ds.labels[r] == lj)
                .collect();
            let l = rows.len();
            let mut perm: Vec<usize> = (0..l).collect();
            for a in 0..l {
                let b = a + rng.below(l - a);
                perm.swap(a, b);
            }
            if !mine(prob_a.len()) {
                prob_a.push(0.0);
                prob_b.push(0.0);
                continue;
            }
            let mut dec = vec![0.0; l];
            for f in 0..PROBABILITY_FOLDS {
                if crate::interrupt::requested() {
                    return Err(Error::Interrupted(
                        "probability estimates stopped in their cross-validation; no model \
                         written"
                            .into(),
                    ));
                }
                let (begin, end) = (f * l / PROBABILITY_FOLDS, (f + 1) * l / PROBABILITY_FOLDS);
                let mut train_rows: Vec<usize> = perm[..begin]
                    .iter()
                    .chain(&perm[end..])
                    .map(|&t| rows[t])
                    .collect();
                train_rows.sort_unstable();
                let held: &[usize] = &perm[begin..end];
                let pos = train_rows.iter().filter(|&&r| ds.labels[r] == li).count();
                let neg = train_rows.len() - pos;
                if pos == 0 || neg == 0 {
                    let v = if pos > 0 {
                        1.0
                    } else if neg > 0 {
                        -1.0
                    } else {
                        0.0
                    };
                    held.iter().for_each(|&t| dec[t] = v);
                    continue;
                }
                let tr = ds.subset(&train_rows);
                let sub_params = TrainParams {
                    device: shared.restrict(&train_rows),
                    // Only the decision values are used: no certification pass.
                    solver: SolverParams {
                        certify: false,
                        ..params.solver.clone()
                    },
                    ..params.for_rows(&train_rows)
                };
                let (sub, _) = train(&tr, &sub_params, &mut |_| Vec::new())?;
                let test_rows: Vec<usize> = held.iter().map(|&t| rows[t]).collect();
                let te = ds.subset(&test_rows);
                let (_, d) = crate::predict::on_device(
                    &shared.restrict(&test_rows),
                    &sub,
                    &te,
                    crate::backend::GPU_PREDICT_MIN_WORK,
                    None,
                )?;
                // The sub-model's one pair is positive for its first class: make it li's.
                let sign = if sub.labels[0] == li { 1.0 } else { -1.0 };
                for (&t, dv) in held.iter().zip(&d) {
                    dec[t] = sign * dv[0];
                }
            }
            let positive: Vec<bool> = rows.iter().map(|&r| ds.labels[r] == li).collect();
            let (a, b) = crate::probability::sigmoid_train(&dec, &positive);
            prob_a.push(a);
            prob_b.push(b);
        }
    }
    model.prob_a = prob_a;
    model.prob_b = prob_b;
    Ok(())
}

/// Stratified k-fold assignment: each class's rows shuffled with `seed`, then dealt to folds
/// in turn (the classes one after another), so every fold holds each class in proportion and
/// the fold sizes differ by at most one. Returns the fold of each row.
pub fn stratified_folds(labels: &[f64], k: usize, seed: u64) -> Vec<usize> {
    let mut classes: Vec<f64> = Vec::new();
    for &y in labels {
        if !classes.contains(&y) {
            classes.push(y);
        }
    }
    let mut rng = crate::rng::SplitMix64::new(seed ^ 0xF01D_5EED_0000_0001);
    let mut fold = vec![0; labels.len()];
    let mut next = 0;
    for c in classes {
        let mut rows: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c).collect();
        rng.shuffle(&mut rows);
        for i in rows {
            fold[i] = next % k;
            next += 1;
        }
    }
    fold
}

/// The observers of one binary sub-problem of one fold: called with the fold's index.
pub type FoldObservers<'a> = dyn FnMut(usize, &PairInfo) -> Vec<Box<dyn Observer>> + 'a;

/// Outcome of a cross-validation.
#[derive(Debug, Clone)]
pub struct CvReport {
    /// Held-out rows predicted correctly.
    pub correct: usize,
    /// Rows.
    pub total: usize,
    /// Per fold: (held-out rows, correct, training reports).
    pub folds: Vec<(usize, usize, Vec<PairReport>)>,
}

impl CvReport {
    /// Accuracy in percent.
    pub fn accuracy(&self) -> f64 {
        100.0 * self.correct as f64 / self.total.max(1) as f64
    }
}

/// Stratified `k`-fold cross-validation (seeded by `seed`): trains on k − 1 folds, predicts
/// the held-out one, for each fold. γ auto is resolved once on all of `ds`, as LIBSVM's
/// `svm-train -v` keeps one γ. On a GPU, `ds` is uploaded once ([`Device::share`]; pass a
/// device shared already, as `fwsvm grid` does, to reuse one upload across calls) and every
/// fold binds its rows of it. `observers` gets the fold index in `PairInfo::index` terms of
/// its own calls (one call per binary sub-problem of each fold).
pub fn cross_validate(
    ds: &Dataset,
    params: &TrainParams,
    k: usize,
    seed: u64,
    observers: &mut FoldObservers<'_>,
) -> Result<CvReport> {
    cross_validate_folds(ds, params, k, seed, observers, &|_| true)
}

/// [`cross_validate`] training only the folds `run` picks (the same folds, γ and settings as
/// the whole run; a distributed run gives each rank its own folds): a fold left out counts
/// its held-out rows with none correct and no training reports.
pub fn cross_validate_folds(
    ds: &Dataset,
    params: &TrainParams,
    k: usize,
    seed: u64,
    observers: &mut FoldObservers<'_>,
    run: &dyn Fn(usize) -> bool,
) -> Result<CvReport> {
    params.check()?;
    let m = ds.len();
    if k < 2 || k > m {
        return Err(Error::param(format!(
            "cross-validation needs 2 ≤ K folds ≤ the number of rows ({m}), got {k}"
        )));
    }
    let kernel = params.resolve_kernel(ds)?;
    let params = params.with_gamma_of(&kernel);
    let fold = stratified_folds(&ds.labels, k, seed);
    // Sampled runs keep no data on the device beyond their blocks' rows: nothing to share.
    let shared = if params.sample > 0 {
        params.device.clone()
    } else {
        params.device.share_once(ds)?
    };
    let mut report = CvReport {
        correct: 0,
        total: m,
        folds: Vec::with_capacity(k),
    };
    for f in 0..k {
        if crate::interrupt::requested() {
            return Err(Error::Interrupted(format!(
                "cross-validation stopped after {f} of {k} folds; no accuracy reported"
            )));
        }
        let train_rows: Vec<usize> = (0..m).filter(|&i| fold[i] != f).collect();
        let test_rows: Vec<usize> = (0..m).filter(|&i| fold[i] == f).collect();
        if !run(f) {
            report.folds.push((test_rows.len(), 0, Vec::new()));
            continue;
        }
        let tr = ds.subset(&train_rows);
        let te = ds.subset(&test_rows);
        if class_order(&tr).len() < 2 {
            return Err(Error::param(format!(
                "fold {} of {k} leaves a single class to train on; use fewer folds",
                f + 1
            )));
        }
        let fold_params = TrainParams {
            device: shared.restrict(&train_rows),
            ..params.for_rows(&train_rows)
        };
        let (model, reports) = train(&tr, &fold_params, &mut |info| observers(f, info))?;
        if crate::interrupt::requested() {
            return Err(Error::Interrupted(format!(
                "cross-validation stopped in fold {} of {k}; no accuracy reported",
                f + 1
            )));
        }
        let pred = crate::predict::labels_on_device(
            &shared.restrict(&test_rows),
            &model,
            &te,
            crate::backend::GPU_PREDICT_MIN_WORK,
            None,
        )?;
        let correct = pred.iter().zip(&te.labels).filter(|(p, y)| p == y).count();
        report.correct += correct;
        report.folds.push((te.len(), correct, reports));
    }
    Ok(report)
}
