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
use crate::train::TrainParams;

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
    let params = params.with_gamma_of(&model.kernel);
    let (rank, size) = (comm.rank(), comm.size());
    let fitted = crate::train::add_probabilities_dealt(&all, &params, model, &|p| p % size == rank);
    agree(comm, fitted)?;
    comm.sum(&mut model.prob_a)?;
    comm.sum(&mut model.prob_b)?;
    Ok(())
}
