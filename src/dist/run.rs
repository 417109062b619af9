//! The parts of a distributed `train` run beside training on the rows: k-fold
//! cross-validation and Platt's probability sigmoids over the ranks, each choosing how to
//! spread its work ([`super::plan::choose`]). Collective: every rank calls them with the same
//! arguments; the command line only reports what they return.

use super::comm::{Comm, agree};
use super::plan::{Distribute, choose, gather_dataset};
use super::slice::RowSlice;
use super::train::FoldCount;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::solver::{Observer, SolveResult};
use crate::train::{PairInfo, TrainParams};

/// k-fold cross-validation of `params` over the ranks (`local`: this rank's rows, `slice`
/// where they lie): the folds dealt to ranks that gather every row when that is cheaper
/// (`distribute` can insist either way), else each fold trained over all ranks by rows.
/// `on_plan` hears the choice and why before the work starts. Per fold: (held out, correct,
/// iterations), the same on every rank.
pub fn cross_validate_run(
    comm: &dyn Comm,
    local: Dataset,
    slice: RowSlice,
    params: &TrainParams,
    (k, seed): (usize, u64),
    distribute: Distribute,
    on_plan: &mut dyn FnMut(&str),
) -> Result<Vec<FoldCount>> {
    let plan = choose(comm, &local, k, "folds", distribute)?;
    on_plan(&plan.why);
    if plan.plan == Distribute::Tasks {
        let all = gather_dataset(comm, &local, &slice)?;
        drop(local);
        return Ok(super::train::cross_validate_tasks(
            comm,
            &all,
            std::slice::from_ref(params),
            k,
            seed,
        )?
        .swap_remove(0));
    }
    let folds = super::train::cross_validate(comm, &local, slice, params, k, seed);
    Ok(agree(comm, folds)?
        .into_iter()
        .map(|(n, c, rs)| (n, c, rs.iter().map(|r| r.iterations).sum()))
        .collect())
}

/// A grid search's evaluations for [`grid_run`]: `count` points, the settings of point i
/// `point(base, i)` (from `base` with the device the points share), each cross-validated
/// with `folds` folds of seed `seed`; `distribute` can insist on how they are spread.
pub struct GridJob<'a> {
    /// The settings every point starts from.
    pub base: &'a TrainParams,
    /// Point i's settings from the base.
    pub point: &'a dyn Fn(&TrainParams, usize) -> TrainParams,
    /// How many points.
    pub count: usize,
    /// Folds per point.
    pub folds: usize,
    /// The folds' seed.
    pub seed: u64,
    /// Tasks, rows, or the cheaper.
    pub distribute: Distribute,
}

/// A grid search's points over the ranks (`local`: this rank's rows, `slice` where they lie).
/// With the whole data fitting every rank, the points × folds are dealt to the ranks whole,
/// P points at a time (every rank gathers all rows once, and a GPU holds them once for all
/// points), a point's seconds its batch's wall time shared among the batch's points;
/// otherwise each fold of each point is trained over all ranks by rows. `on_plan` hears the
/// choice and why; `record(i, accuracy %, seconds)` is called on every rank as point i
/// finishes, in order, and its error on any rank ends every rank. Collective.
pub fn grid_run(
    comm: &dyn Comm,
    (local, slice): (Dataset, RowSlice),
    job: GridJob<'_>,
    on_plan: &mut dyn FnMut(&str),
    record: &mut dyn FnMut(usize, f64, f64) -> Result<()>,
) -> Result<()> {
    let what = "grid points × folds";
    let plan = choose(comm, &local, job.count * job.folds, what, job.distribute)?;
    on_plan(&plan.why);
    let accuracy = |folds: &[FoldCount]| {
        let (held, right) = folds
            .iter()
            .fold((0, 0), |(h, r), &(n, c, _)| (h + n, r + c));
        100.0 * right as f64 / held.max(1) as f64
    };
    if plan.plan == Distribute::Tasks {
        let all = gather_dataset(comm, &local, &slice)?;
        drop(local);
        let mut base = job.base.clone();
        if base.sample == 0 {
            let shared = base.device.share(&all);
            base.device = agree(comm, shared)?;
        }
        let ids: Vec<usize> = (0..job.count).collect();
        for batch in ids.chunks(comm.size()) {
            let t = std::time::Instant::now();
            let points: Vec<TrainParams> = batch.iter().map(|&i| (job.point)(&base, i)).collect();
            let counts =
                super::train::cross_validate_tasks(comm, &all, &points, job.folds, job.seed)?;
            let each = t.elapsed().as_secs_f64() / batch.len() as f64;
            for (&i, folds) in batch.iter().zip(&counts) {
                let rec = record(i, accuracy(folds), each);
                agree(comm, rec)?;
            }
        }
        return Ok(());
    }
    for i in 0..job.count {
        let t = std::time::Instant::now();
        let params = (job.point)(job.base, i);
        let folds = super::train::cross_validate(comm, &local, slice, &params, job.folds, job.seed);
        let folds: Vec<FoldCount> = agree(comm, folds)?
            .into_iter()
            .map(|(n, c, rs)| (n, c, rs.iter().map(|r| r.iterations).sum()))
            .collect();
        let rec = record(i, accuracy(&folds), t.elapsed().as_secs_f64());
        agree(comm, rec)?;
    }
    Ok(())
}

/// Each class pair's observers, given how the pairs are spread over the ranks.
pub type PlanObservers<'f> = &'f mut dyn FnMut(Distribute, &PairInfo) -> Vec<Box<dyn Observer>>;

/// A model trained over the ranks, `classes` of them ([`super::train::class_order`]): a binary
/// problem (or one-class) over every rank's rows;
/// one-versus-one class pairs either each trained over all ranks by rows, or dealt whole to
/// ranks that gather every row when that is cheaper (`distribute` can insist either way;
/// the device is then shared by the pairs). `observers(plan, pair)` gives each pair's
/// observers; `on_plan` hears the choice for several classes before the work starts. Returns
/// the model and every pair's result, the same on every rank, and the gathered rows when the
/// pairs were dealt.
pub fn train_run(
    comm: &dyn Comm,
    (local, slice, classes): (&Dataset, RowSlice, usize),
    params: &TrainParams,
    distribute: Distribute,
    observers: PlanObservers<'_>,
    on_plan: &mut dyn FnMut(&str),
) -> Result<(Model, Vec<SolveResult>, Option<Dataset>)> {
    let plan = if classes >= 3 && !params.one_class {
        let pairs = classes * (classes - 1) / 2;
        let plan = choose(comm, local, pairs, "class pairs", distribute)?;
        on_plan(&plan.why);
        plan.plan
    } else {
        Distribute::Rows
    };
    if plan == Distribute::Tasks {
        let all = gather_dataset(comm, local, &slice)?;
        let mut params = params.clone();
        if params.sample == 0 {
            let shared = params.device.share(&all);
            params.device = agree(comm, shared)?;
        }
        let mut per_pair = |info: &PairInfo| observers(Distribute::Tasks, info);
        let (model, reports) =
            super::train::train_pairs_dealt_observed(comm, &all, &params, &mut per_pair)?;
        let results = reports.into_iter().map(|r| r.result).collect();
        return Ok((model, results, Some(all)));
    }
    let mut per_pair = |info: &PairInfo| observers(Distribute::Rows, info);
    let trained =
        super::train::train_model_observed(comm, local, slice, params, &mut [], &mut per_pair);
    let (model, results) = agree(comm, trained)?;
    Ok((model, results, None))
}

/// Every rank's (pair, block of bytes) — the trace lines of the class pairs it trained — in
/// rank order, one broadcast per rank. Collective.
pub fn gather_pair_blocks(
    comm: &dyn Comm,
    own: &[(usize, Vec<u8>)],
) -> Result<Vec<(usize, Vec<u8>)>> {
    let write = |buf: &mut Vec<u8>| {
        for (pair, line) in own {
            buf.extend_from_slice(&(*pair as u64).to_le_bytes());
            buf.extend_from_slice(&(line.len() as u64).to_le_bytes());
            buf.extend_from_slice(line);
        }
    };
    let read = |mut rest: &[u8], out: &mut Vec<(usize, Vec<u8>)>| {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize;
        while !rest.is_empty() {
            if rest.len() < 16 || rest.len() - 16 < word(&rest[8..16]) {
                return false;
            }
            let (pair, n) = (word(&rest[..8]), word(&rest[8..16]));
            out.push((pair, rest[16..16 + n].to_vec()));
            rest = &rest[16 + n..];
        }
        true
    };
    super::comm::gather_parts(comm, "the trace lines", write, read)
}

/// Platt's sigmoids for every class pair of `model` over the ranks: each pair's internal
/// cross-validation needs the pair's rows together, so the pairs are dealt to ranks that
/// hold every row (`all_rows` when the training gathered them already, else gathered here).
/// An error, on every rank, when the plan (`distribute`) keeps the rows split. `on_plan`
/// hears the choice before the work starts.
pub fn add_probabilities_run(
    comm: &dyn Comm,
    (local, slice): (&Dataset, RowSlice),
    all_rows: Option<Dataset>,
    params: &TrainParams,
    model: &mut Model,
    distribute: Distribute,
    on_plan: &mut dyn FnMut(&str),
) -> Result<()> {
    let plan = choose(comm, local, usize::MAX, "class pairs' sigmoids", distribute)?;
    if plan.plan != Distribute::Tasks {
        return Err(Error::param(format!(
            "probability estimates over ranks fit each class pair's sigmoid on one rank holding \
             all rows, but {}",
            plan.why
                .trim_start_matches("every training is split over the ranks by rows: ")
        )));
    }
    on_plan(&plan.why);
    let all = match all_rows {
        Some(all) => all,
        None => gather_dataset(comm, local, &slice)?,
    };
    let params = params.resolved().with_gamma_of(&model.kernel);
    let (rank, size) = (comm.rank(), comm.size());
    let fitted = crate::train::add_probabilities_dealt(&all, &params, model, &|p| p % size == rank);
    agree(comm, fitted)?;
    comm.sum(&mut model.prob_a)?;
    comm.sum(&mut model.prob_b)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::comm::on_threads;

    /// Every rank gets every rank's blocks in rank order, empty blocks and ranks included.
    #[test]
    fn pair_blocks_reach_every_rank_in_rank_order() {
        let got = on_threads(3, |c| {
            let own: Vec<(usize, Vec<u8>)> = match c.rank() {
                0 => vec![(2, b"two\n".to_vec()), (0, Vec::new())],
                1 => Vec::new(),
                _ => vec![(1, b"one\nmore\n".to_vec())],
            };
            gather_pair_blocks(c, &own).unwrap()
        });
        let want = vec![
            (2, b"two\n".to_vec()),
            (0, Vec::new()),
            (1, b"one\nmore\n".to_vec()),
        ];
        for g in got {
            assert_eq!(g, want);
        }
    }
}
