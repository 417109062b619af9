//! Training one binary model over the ranks of a job: every rank holds its slice of the rows,
//! the solver runs on every rank over a [`DistBackend`], and the model — the support vectors'
//! rows gathered from their ranks — is the one `train::train` builds in one process, to the
//! bit with f64 columns.

use super::backend::DistBackend;
use super::comm::Comm;
use super::exchange::exchange_rows;
use super::slice::RowSlice;
use crate::backend::Device;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::model::Model;
use crate::solver::{Algorithm, Observer, SolveResult, solve};
use crate::train::{GAMMA_PAIRS, Gamma, TrainParams};

/// The classes in order of first appearance over all ranks (rank 0's rows first), with
/// LIBSVM's rule that a {−1, +1} problem lists +1 first ([`crate::train::class_order`]).
pub fn class_order(comm: &dyn Comm, local: &Dataset) -> Result<Vec<f64>> {
    let mut all: Vec<f64> = Vec::new();
    let mut buf = Vec::new();
    for root in 0..comm.size() {
        buf.clear();
        if root == comm.rank() {
            for c in local.classes() {
                buf.extend_from_slice(&c.to_le_bytes());
            }
        }
        comm.broadcast(root, &mut buf)?;
        for c in buf.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            let c = f64::from_le_bytes(w);
            if !all.contains(&c) {
                all.push(c);
            }
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

/// Trains the binary model of the rows every rank holds a slice of (`local`, global rows
/// `slice`) with `params` on this rank's CPU; every rank must call it, and every rank returns
/// the same model and result. FW variants and the CVM; one-versus-one, sampled iterations,
/// sample weights, working-set shrinking and GPUs per rank are not distributed yet (refused).
pub fn train_binary(
    comm: &dyn Comm,
    local: &Dataset,
    slice: RowSlice,
    params: &TrainParams,
    observers: &mut [&mut dyn Observer],
) -> Result<(Model, SolveResult)> {
    let params = params.check()?;
    let alg = params.solver.algorithm;
    let refuse = |what: &str| {
        Err(Error::param(format!(
            "{what} is not distributed over ranks yet: run it in one process"
        )))
    };
    if matches!(alg, Algorithm::SparseFw | Algorithm::SimpleSvm) {
        return refuse(&format!("-a {alg}"));
    }
    if params.sample > 0 {
        return refuse("--sample");
    }
    if params.one_class {
        return refuse("one-class training (-s 2)");
    }
    if params.sample_weights.is_some() {
        return refuse("training with sample weights");
    }
    if !matches!(params.device, Device::Cpu) {
        return refuse("a GPU per rank");
    }
    let labels = class_order(comm, local)?;
    match labels.len() {
        2 => {}
        n if n < 2 => {
            return Err(Error::param(format!(
                "the training data have one class ({}); at least two are needed",
                labels.first().copied().unwrap_or(f64::NAN)
            )));
        }
        n => return refuse(&format!("one-versus-one training ({n} classes)")),
    }
    let firsts = comm.gather_all(slice.first as u64)?;
    let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
    starts.push(slice.total);
    let kernel = match params.gamma {
        Gamma::Value(_) => params.resolve_kernel(local)?,
        Gamma::Auto => {
            let g = gamma_heuristic(comm, local, &slice, &starts, params.solver.seed)?;
            params
                .with_gamma_of(&Kernel::Rbf { gamma: g })
                .resolve_kernel(local)?
        }
    };
    let y: Vec<f64> = local
        .labels
        .iter()
        .map(|&l| if l == labels[0] { 1.0 } else { -1.0 })
        .collect();
    let prob = crate::problem::Problem::new(local, y, kernel, params.c)?.with_class_weights(
        params.class_weight_of(labels[0]),
        params.class_weight_of(labels[1]),
    )?;
    let be = crate::backend::cpu::cpu_backend(&prob, params.cpu);
    let mut dist = DistBackend::new(comm, &prob, be, slice)?;
    let result = solve(&prob, &mut dist, &params.solver, observers)?;
    // The model as train's binary pair builds it: ρ = −Σ α_i y_i in α's order, the support
    // vectors by class and then by row.
    let sv: Vec<usize> = result.alpha.indices().to_vec();
    let got = exchange_rows(comm, local, slice.first, &starts, &sv, &|i| {
        [prob.y[i], 0.0]
    })?;
    let y_of = |j: usize| got[sv.iter().position(|&s| s == j).unwrap_or(0)].1[0];
    let mut rho = 0.0;
    for (j, a) in result.alpha.iter() {
        rho -= a * y_of(j);
    }
    let rho = result.rho.unwrap_or(rho);
    let mut order: Vec<(usize, usize)> = sv
        .iter()
        .enumerate()
        .map(|(k, &j)| (if got[k].1[0] > 0.0 { 0 } else { 1 }, j))
        .collect();
    order.sort_unstable();
    let mut nr_sv = vec![0; 2];
    let (mut rows, mut sv_labels, mut coef, mut sv_rows) = (vec![], vec![], vec![], vec![]);
    for &(c, j) in &order {
        let k = sv.iter().position(|&s| s == j).unwrap_or(0);
        nr_sv[c] += 1;
        rows.push(&got[k].0);
        sv_labels.push(labels[c]);
        coef.push(result.alpha.get(j) * got[k].1[0]);
        sv_rows.push(j);
    }
    let model = Model {
        kernel,
        labels,
        nr_sv,
        sv: super::backend::with_rows(&local.subset(&[]), &rows, &sv_labels),
        sv_coef: vec![coef],
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        one_class: false,
        sv_rows,
    };
    Ok((model, result))
}
