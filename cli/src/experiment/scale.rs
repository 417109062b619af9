//! The scaling bench behind `fwsvm bench scale`: training time against the number of rows on
//! the CVM papers' checkerboard (seeded, generated in memory) at a fixed ε, as a table, a CSV,
//! a log-log chart and the least-squares exponent b of seconds ∝ m^b.

use fwsvm::data::synth::checkerboard;
use fwsvm::error::{Error, Result};
use fwsvm::solver::{Observer, StopReason};
use fwsvm::train::{Gamma, PairInfo, TrainParams, train};
use std::fmt::Write as _;

/// What to run: the sizes, the board, the seeds and the training settings (RBF, one seed).
#[derive(Debug, Clone)]
pub struct ScalePlan {
    /// Training rows m, one run each.
    pub rows: Vec<usize>,
    /// Squares per side of the board.
    pub board: u32,
    /// Seed of the training rows (the test rows use seed + 1).
    pub seed: u64,
    /// Test rows.
    pub test_rows: usize,
    /// Training settings (the solver's seed is `seed`).
    pub params: TrainParams,
    /// Rank counts: 1 trains in this process as `fwsvm train` does; P > 1 trains over P
    /// ranks played by threads of this process (`fwsvm::dist`, CPU backend), which shows the
    /// distributed run's overhead, traffic and per-rank memory on this machine.
    pub ranks: Vec<usize>,
}

/// One size's outcome.
#[derive(Debug, Clone)]
pub struct SizeRun {
    /// Training rows.
    pub m: usize,
    /// Solver seconds (initialisation and iterations).
    pub seconds: f64,
    /// Certification seconds.
    pub certify_seconds: f64,
    /// Iterations.
    pub iterations: u64,
    /// Support vectors.
    pub svs: usize,
    /// Certified gap (the solver's own without certification).
    pub gap: f64,
    /// Test accuracy in percent.
    pub accuracy: f64,
    /// Why it stopped.
    pub stop: StopReason,
    /// Ranks it ran on.
    pub ranks: usize,
    /// Messages rank 0 sent per iteration (0 on one rank).
    pub messages_per_iteration: f64,
    /// Bytes rank 0 sent per iteration.
    pub bytes_per_iteration: f64,
    /// Feature and gradient bytes held by the largest rank (its rows' values and indices, g
    /// and g⁻: what grows with m/P).
    pub bytes_per_rank: u64,
}

/// What the caller of [`run_scale`] supplies: progress and what happens after each size.
pub trait ScaleHooks {
    /// Observers for the run `label` describes (`[k/n] m = …`).
    fn observers(&mut self, _label: &str) -> Vec<Box<dyn Observer>> {
        Vec::new()
    }
    /// Called after each size with every run so far (the last is new).
    fn finished(&mut self, _runs: &[SizeRun]) -> Result<()> {
        Ok(())
    }
}

/// Trains and tests every size of `plan`; Ctrl-C ends it with [`Error::Interrupted`] after
/// the size in progress.
pub fn run_scale(plan: &ScalePlan, hooks: &mut dyn ScaleHooks) -> Result<Vec<SizeRun>> {
    let test = checkerboard(plan.test_rows.max(1), plan.board, plan.seed + 1);
    let mut params = plan.params.clone();
    params.solver.seed = plan.seed;
    let ranks: Vec<usize> = if plan.ranks.is_empty() {
        vec![1]
    } else {
        plan.ranks.clone()
    };
    if ranks.iter().any(|&r| r > 1) && !matches!(params.device, fwsvm::backend::Device::Cpu) {
        return Err(Error::param(
            "ranks above 1 run on the CPU backend only".into(),
        ));
    }
    let total = plan.rows.len() * ranks.len();
    let mut runs = Vec::with_capacity(total);
    for &m in &plan.rows {
        let ds = checkerboard(m, plan.board, plan.seed);
        if fwsvm::train::class_order(&ds).len() < 2 {
            return Err(Error::param(format!(
                "{m} rows hold a single class; use more rows"
            )));
        }
        for &r in &ranks {
            let label = format!("[{}/{total}] m = {m}, {r} rank(s)", runs.len() + 1);
            let run = if r <= 1 {
                let mut obs = |_: &PairInfo| hooks.observers(&label);
                one_process(&ds, &params, &test, &mut obs)?
            } else {
                over_ranks(&ds, &params, &test, r)?
            };
            if fwsvm::interrupt::requested() {
                return Err(Error::Interrupted(format!(
                    "the scale bench stopped at {m} rows; the finished sizes are kept"
                )));
            }
            runs.push(run);
            hooks.finished(&runs)?;
        }
    }
    Ok(runs)
}

/// Feature and gradient bytes of `rows` rows of `ds` (values and CSR indices, g and g⁻).
fn held_bytes(ds: &fwsvm::data::Dataset, rows: usize) -> u64 {
    let per_row = if ds.is_dense() {
        4 * ds.n_features()
    } else {
        8 * ds.nnz() / ds.len().max(1) + 8
    };
    (rows * (per_row + 16)) as u64
}

/// One size trained in this process.
fn one_process(
    ds: &fwsvm::data::Dataset,
    params: &TrainParams,
    test: &fwsvm::data::Dataset,
    obs: &mut dyn FnMut(&PairInfo) -> Vec<Box<dyn Observer>>,
) -> Result<SizeRun> {
    let (model, reports) = train(ds, params, obs)?;
    let r = &reports[0].result;
    Ok(SizeRun {
        m: ds.len(),
        seconds: r.seconds,
        certify_seconds: r.certify_seconds,
        iterations: r.iterations,
        svs: r.alpha.len(),
        gap: r.certified_gap.unwrap_or(r.gap),
        accuracy: super::test_accuracy(&params.device, &model, test)?,
        stop: r.stop,
        ranks: 1,
        messages_per_iteration: 0.0,
        bytes_per_iteration: 0.0,
        bytes_per_rank: held_bytes(ds, ds.len()),
    })
}

/// One size trained over `ranks` ranks played by threads ([`fwsvm::dist::train::train_model`]).
fn over_ranks(
    ds: &fwsvm::data::Dataset,
    params: &TrainParams,
    test: &fwsvm::data::Dataset,
    ranks: usize,
) -> Result<SizeRun> {
    use fwsvm::dist::comm::{Comm, on_threads};
    let m = ds.len();
    let out = on_threads(ranks, |comm| {
        let (a, b) = fwsvm::dist::slice::share(m as u64, comm.rank(), comm.size());
        let rows: Vec<usize> = (a as usize..b as usize).collect();
        let local = ds.subset(&rows);
        let slice = fwsvm::dist::slice::RowSlice {
            first: a as usize,
            rows: rows.len(),
            total: m,
        };
        fwsvm::dist::train::train_model(comm, &local, slice, params, &mut []).and_then(
            |(model, mut rs)| {
                let r = rs
                    .pop()
                    .ok_or_else(|| Error::Backend("no class pair was trained".into()))?;
                Ok((model, r, comm.traffic(), held_bytes(ds, rows.len())))
            },
        )
    });
    let mut out = out.into_iter();
    let (model, r, traffic, bytes) = out
        .next()
        .ok_or_else(|| Error::Backend("no rank ran".into()))??;
    let mut largest = bytes;
    for o in out {
        largest = largest.max(o?.3);
    }
    let it = r.iterations.max(1) as f64;
    Ok(SizeRun {
        m,
        seconds: r.seconds,
        certify_seconds: r.certify_seconds,
        iterations: r.iterations,
        svs: r.alpha.len(),
        gap: r.certified_gap.unwrap_or(r.gap),
        accuracy: super::test_accuracy(&fwsvm::backend::Device::Cpu, &model, test)?,
        stop: r.stop,
        ranks,
        messages_per_iteration: traffic.messages as f64 / it,
        bytes_per_iteration: traffic.bytes as f64 / it,
        bytes_per_rank: largest,
    })
}

/// (log₁₀ m, log₁₀ seconds) of the runs on the first rank count that converged in a positive
/// time: what the exponent is fitted to.
pub fn log_points(runs: &[SizeRun]) -> Vec<(f64, f64)> {
    let first = runs.first().map_or(1, |r| r.ranks);
    runs.iter()
        .filter(|r| r.ranks == first && r.stop == StopReason::Converged && r.seconds > 0.0)
        .map(|r| ((r.m as f64).log10(), r.seconds.log10()))
        .collect()
}

/// Least-squares slope and intercept of y on x.
pub fn fit_line(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((b, my - b * mx))
}

/// The runs as CSV.
pub fn csv(runs: &[SizeRun]) -> String {
    let mut csv = String::from(
        "m,seconds,certify_seconds,iterations,svs,certified_gap,accuracy,stop,ranks,\
         messages_per_iteration,bytes_per_iteration,bytes_per_rank\n",
    );
    for r in runs {
        let _ = writeln!(
            csv,
            "{},{:.4},{:.4},{},{},{:.4e},{:.4},\"{}\",{},{:.2},{:.0},{}",
            r.m,
            r.seconds,
            r.certify_seconds,
            r.iterations,
            r.svs,
            r.gap,
            r.accuracy,
            r.stop,
            r.ranks,
            r.messages_per_iteration,
            r.bytes_per_iteration,
            r.bytes_per_rank
        );
    }
    csv
}

/// The Markdown report: the settings, one row per size, the fitted exponent.
pub fn markdown(plan: &ScalePlan, runs: &[SizeRun]) -> String {
    let p = &plan.params;
    let distributed = plan.ranks.iter().any(|&r| r > 1);
    let gamma = match p.gamma {
        Gamma::Value(g) => g.to_string(),
        Gamma::Auto => "auto".into(),
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# fwsvm bench scale\n\n{alg}, checkerboard {board}×{board}, RBF γ = {gamma}, C = {c}, ε = {eps:e}, rel-eps {rel}{sample}, {device}; test: {test} rows (seed {tseed}). Seconds = solver time (initialisation + iterations).{ranks_note}\n\n| m |{ranks_head} seconds | iterations | SVs | {gap} | test acc. % | stop |{traffic_head}\n|---|{ranks_rule}---|---|---|---|---|---|{traffic_rule}",
        alg = p.algorithm(),
        board = plan.board,
        c = p.c,
        eps = p.solver.eps,
        rel = p.resolved().solver.rel_eps(),
        sample = if p.sample > 0 {
            format!(", --sample {}", p.sample)
        } else {
            String::new()
        },
        device = p.device.describe(),
        test = plan.test_rows.max(1),
        tseed = plan.seed + 1,
        gap = if p.solver.certify {
            "certified gap"
        } else {
            "gap (solver's own, --no-certify)"
        },
        ranks_note = if distributed {
            " Ranks above 1 are threads of this process training over `fwsvm::dist` (the \
             figures show the distributed run's overhead, traffic and per-rank memory on these \
             cores, not a speed-up); messages and bytes are rank 0's per iteration, bytes per \
             rank the largest rank's feature and gradient bytes."
        } else {
            ""
        },
        ranks_head = if distributed { " ranks |" } else { "" },
        ranks_rule = if distributed { "---|" } else { "" },
        traffic_head = if distributed {
            " messages/it | bytes/it | bytes/rank |"
        } else {
            ""
        },
        traffic_rule = if distributed { "---|---|---|" } else { "" },
    );
    for r in runs {
        let (ranks, traffic) = if distributed {
            (
                format!(" {} |", r.ranks),
                format!(
                    " {:.1} | {:.0} | {} |",
                    r.messages_per_iteration, r.bytes_per_iteration, r.bytes_per_rank
                ),
            )
        } else {
            (String::new(), String::new())
        };
        let _ = writeln!(
            md,
            "| {} |{ranks} {:.2} | {} | {} | {:.2e} | {:.2} | {} |{traffic}",
            r.m,
            r.seconds,
            r.iterations,
            r.svs,
            r.gap,
            r.accuracy,
            if r.stop == StopReason::Converged {
                "converged".to_string()
            } else {
                r.stop.to_string()
            }
        );
    }
    let pts = log_points(runs);
    match fit_line(&pts) {
        Some((b, _)) => {
            let _ = writeln!(
                md,
                "\nLeast-squares fit over the {} converged runs{}: seconds ∝ m^{b:.2}.",
                pts.len(),
                if distributed {
                    format!(" on {} rank(s)", runs.first().map_or(1, |r| r.ranks))
                } else {
                    String::new()
                }
            );
        }
        None => {
            let _ = writeln!(md, "\n(Fewer than two converged runs: no exponent fitted.)");
        }
    }
    md
}

/// The log-log chart of seconds against rows (SVG), with the fitted power law.
pub fn chart(plan: &ScalePlan, runs: &[SizeRun]) -> Result<String> {
    let alg = plan.params.algorithm();
    let pts = log_points(runs);
    super::charts::LineChart {
        title: &format!("{alg} on the checkerboard: training seconds vs rows"),
        x_name: "rows m",
        y_name: "seconds",
        series: vec![(
            alg.to_string(),
            pts.iter()
                .map(|&(x, y)| (10f64.powf(x), 10f64.powf(y)))
                .collect(),
        )],
        log_x: true,
        fit: fit_line(&pts),
    }
    .render()
}

#[cfg(test)]
mod tests {
    #[test]
    fn fit_line_recovers_a_power_law() {
        let pts: Vec<(f64, f64)> = [1e4f64, 1e5, 1e6]
            .iter()
            .map(|m| (m.log10(), (3e-7 * m.powf(1.3)).log10()))
            .collect();
        let (b, c) = super::fit_line(&pts).unwrap();
        assert!((b - 1.3).abs() < 1e-12 && (c - 3e-7f64.log10()).abs() < 1e-12);
        assert!(super::fit_line(&pts[..1]).is_none());
    }
}
