//! The scaling bench behind `fwsvm bench scale`: training time against the number of rows on
//! the CVM papers' checkerboard (seeded, generated in memory) at a fixed ε, as a table, a CSV,
//! a log-log chart and the least-squares exponent b of seconds ∝ m^b.

use crate::data::synth::checkerboard;
use crate::error::{Error, Result};
use crate::solver::{Observer, StopReason};
use crate::train::{Gamma, PairInfo, TrainParams, train};
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
    let mut runs = Vec::with_capacity(plan.rows.len());
    for (k, &m) in plan.rows.iter().enumerate() {
        let ds = checkerboard(m, plan.board, plan.seed);
        if crate::train::class_order(&ds).len() < 2 {
            return Err(Error::param(format!(
                "{m} rows hold a single class; use more rows"
            )));
        }
        let label = format!("[{}/{}] m = {m}", k + 1, plan.rows.len());
        let mut obs = |_: &PairInfo| hooks.observers(&label);
        let (model, reports) = train(&ds, &params, &mut obs)?;
        if crate::interrupt::requested() {
            return Err(Error::Interrupted(format!(
                "the scale bench stopped at {m} rows; the finished sizes are kept"
            )));
        }
        let r = &reports[0].result;
        let accuracy = super::test_accuracy(&params.device, &model, &test)?;
        runs.push(SizeRun {
            m,
            seconds: r.seconds,
            certify_seconds: r.certify_seconds,
            iterations: r.iterations,
            svs: r.alpha.len(),
            gap: r.certified_gap.unwrap_or(r.gap),
            accuracy,
            stop: r.stop,
        });
        hooks.finished(&runs)?;
    }
    Ok(runs)
}

/// (log₁₀ m, log₁₀ seconds) of the runs that converged in a positive time: what the exponent
/// is fitted to.
pub fn log_points(runs: &[SizeRun]) -> Vec<(f64, f64)> {
    runs.iter()
        .filter(|r| r.stop == StopReason::Converged && r.seconds > 0.0)
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
    let mut csv =
        String::from("m,seconds,certify_seconds,iterations,svs,certified_gap,accuracy,stop\n");
    for r in runs {
        let _ = writeln!(
            csv,
            "{},{:.4},{:.4},{},{},{:.4e},{:.4},\"{}\"",
            r.m, r.seconds, r.certify_seconds, r.iterations, r.svs, r.gap, r.accuracy, r.stop
        );
    }
    csv
}

/// The Markdown report: the settings, one row per size, the fitted exponent.
pub fn markdown(plan: &ScalePlan, runs: &[SizeRun]) -> String {
    let p = &plan.params;
    let gamma = match p.gamma {
        Gamma::Value(g) => g.to_string(),
        Gamma::Auto => "auto".into(),
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# fwsvm bench scale\n\n{alg}, checkerboard {board}×{board}, RBF γ = {gamma}, C = {c}, ε = {eps:e}, rel-eps {rel}{sample}, {device}; test: {test} rows (seed {tseed}). Seconds = solver time (initialisation + iterations).\n\n| m | seconds | iterations | SVs | {gap} | test acc. % | stop |\n|---|---|---|---|---|---|---|",
        alg = p.solver.algorithm,
        board = plan.board,
        c = p.c,
        eps = p.solver.eps,
        rel = p.solver.rel_eps,
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
        }
    );
    for r in runs {
        let _ = writeln!(
            md,
            "| {} | {:.2} | {} | {} | {:.2e} | {:.2} | {} |",
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
                "\nLeast-squares fit over the {} converged runs: seconds ∝ m^{b:.2}.",
                pts.len()
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
    let alg = plan.params.solver.algorithm;
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
