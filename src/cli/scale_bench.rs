//! `fwsvm bench scale`: training time against the number of rows on the CVM papers'
//! checkerboard (seeded, generated in memory), at a fixed ε: a table, a CSV, a log-log plot
//! and the least-squares exponent b of seconds ∝ m^b.

use super::common::{BackendArg, ProgressLine, open_device, set_threads};
use crate::backend::cpu::{CpuConfig, Precision};
use crate::data::synth::checkerboard;
use crate::error::{Error, Result};
use crate::output::{RunFiles, write_output};
use crate::solver::{Algorithm, Observer, SolverParams};
use crate::train::{Gamma, KernelKind, PairInfo, TrainParams, train};
use clap::Args;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Options of `fwsvm bench scale`.
#[derive(Debug, Args)]
pub struct ScaleBenchArgs {
    /// Training rows m, comma-separated (1e5 style accepted).
    #[arg(long, value_delimiter = ',', default_value = "1e4,3e4,1e5,3e5,1e6")]
    rows: Vec<String>,
    /// Algorithm.
    #[arg(short = 'a', long, default_value = "partan")]
    algorithm: String,
    /// ε.
    #[arg(short = 'e', long, default_value_t = 1e-4, value_parser = super::common::parse_positive)]
    eps: f64,
    /// Also require gap ≤ rel-eps · 2f (as train; `inf` = the absolute rule alone).
    #[arg(long, default_value_t = 1.0, value_parser = super::common::parse_rel)]
    rel_eps: f64,
    /// C.
    #[arg(short = 'c', long, default_value_t = 100.0, value_parser = super::common::parse_positive)]
    cost: f64,
    /// RBF γ.
    #[arg(short = 'g', long, default_value_t = 2.0, value_parser = super::common::parse_positive)]
    gamma: f64,
    /// Squares per side of the board.
    #[arg(long, default_value_t = 4, value_parser = super::common::parse_count::<u32>)]
    board: u32,
    /// Test rows (another seed).
    #[arg(long, default_value_t = 20_000, value_parser = super::common::parse_count::<usize>)]
    test_rows: usize,
    /// Seed of the training rows (the test rows use seed + 1).
    #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
    seed: u64,
    /// Randomized iterations (as train's --sample).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    sample: usize,
    /// Stop each run after this many seconds (the row says so).
    #[arg(long, value_parser = super::common::parse_positive)]
    time_limit: Option<f64>,
    /// Skip the exact certification of each run (at 10⁷ rows it costs more than training);
    /// the gap column is then the solver's own.
    #[arg(long)]
    no_certify: bool,
    /// Compute backend.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// GPU adapter: an index or part of a name.
    #[arg(long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// Kernel-column cache in MiB.
    #[arg(long, default_value_t = 1024, value_parser = super::common::parse_count::<usize>)]
    cache_mb: usize,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// Output directory (scale.md, scale.csv, scale.svg).
    #[arg(long, default_value = "bench-scale")]
    out: PathBuf,
    /// No progress lines.
    #[arg(short = 'q', long)]
    quiet: bool,
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

/// Runs `fwsvm bench scale`.
pub fn run(a: ScaleBenchArgs) -> Result<()> {
    set_threads(a.threads, a.quiet);
    super::common::check_cache_mb(a.cache_mb)?;
    let rows: Vec<usize> = a
        .rows
        .iter()
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| *v >= 2.0 && v.fract() == 0.0 && *v <= 1e9)
                .map(|v| v as usize)
                .ok_or_else(|| Error::param(format!("--rows: `{s}` is not a row count ≥ 2")))
        })
        .collect::<Result<_>>()?;
    let alg = Algorithm::from_str(&a.algorithm)
        .map_err(|_| Error::param(format!("unknown algorithm `{}`", a.algorithm)))?;
    if let Some(t) = a.time_limit
        && !(t > 0.0 && t.is_finite())
    {
        return Err(Error::param(format!(
            "--time-limit must be a positive number of seconds, got {t}"
        )));
    }
    // simplesvm's α reach C: f64 columns, as train.
    let precision = if alg == Algorithm::SimpleSvm {
        Precision::F64
    } else {
        Precision::F32
    };
    let device = open_device(
        a.backend,
        a.device.as_deref(),
        precision,
        false,
        a.cache_mb << 20,
        a.quiet,
    )?;
    RunFiles::new()
        .output("results CSV", &a.out.join("scale.csv"))
        .output("plot", &a.out.join("scale.svg"))
        .output("table", &a.out.join("scale.md"))
        .check()?;
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, e))?;
    let test = checkerboard(a.test_rows.max(1), a.board, a.seed + 1);
    let params = |seed| TrainParams {
        kernel: KernelKind::Rbf,
        gamma: Gamma::Value(a.gamma),
        coef0: 0.0,
        degree: 3,
        c: a.cost,
        class_weights: Vec::new(),
        sample_weights: None,
        one_class: false,
        solver: SolverParams {
            algorithm: alg,
            eps: a.eps,
            rel_eps: a.rel_eps,
            certify: !a.no_certify,
            time_limit: a.time_limit.map(Duration::from_secs_f64),
            seed,
            ..SolverParams::default()
        },
        cpu: CpuConfig {
            cache_bytes: a.cache_mb << 20,
            precision,
        },
        device: device.clone(),
        sample: a.sample,
        shrink: None,
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# fwsvm bench scale\n\n{alg}, checkerboard {0}×{0}, RBF γ = {1}, C = {2}, ε = {3:e}, rel-eps {8}{4}, {5}; test: {6} rows (seed {7}). Seconds = solver time (initialisation + iterations).\n\n| m | seconds | iterations | SVs | {9} | test acc. % | stop |\n|---|---|---|---|---|---|---|",
        a.board,
        a.gamma,
        a.cost,
        a.eps,
        if a.sample > 0 {
            format!(", --sample {}", a.sample)
        } else {
            String::new()
        },
        device.describe(),
        test.len(),
        a.seed + 1,
        a.rel_eps,
        if a.no_certify {
            "gap (solver's own, --no-certify)"
        } else {
            "certified gap"
        }
    );
    let mut csv =
        String::from("m,seconds,certify_seconds,iterations,svs,certified_gap,accuracy,stop\n");
    let mut pts = Vec::new();
    for (k, &m) in rows.iter().enumerate() {
        let ds = checkerboard(m, a.board, a.seed);
        if crate::train::class_order(&ds).len() < 2 {
            return Err(Error::param(format!(
                "{m} rows hold a single class; use more rows"
            )));
        }
        let label = format!("[{}/{}] m = {m}", k + 1, rows.len());
        let quiet = a.quiet;
        let mut obs = move |_: &PairInfo| -> Vec<Box<dyn Observer>> {
            ProgressLine::new(label.clone(), quiet)
                .map(|p| vec![Box::new(p) as Box<dyn Observer>])
                .unwrap_or_default()
        };
        let (model, reports) = train(&ds, &params(a.seed), &mut obs)?;
        if crate::interrupt::requested() {
            return Err(Error::Interrupted(format!(
                "the scale bench stopped at {m} rows; the finished sizes are in {}",
                a.out.join("scale.csv").display()
            )));
        }
        let r = &reports[0].result;
        let (pred, _) = crate::predict::on_device(
            &device,
            &model,
            &test,
            crate::backend::GPU_PREDICT_MIN_WORK,
            None,
        )?;
        let acc = 100.0
            * pred
                .iter()
                .zip(&test.labels)
                .filter(|(p, y)| p == y)
                .count() as f64
            / test.len() as f64;
        let converged = r.stop == crate::solver::StopReason::Converged;
        if converged && r.seconds > 0.0 {
            pts.push(((m as f64).log10(), r.seconds.log10()));
        }
        let _ = writeln!(
            md,
            "| {m} | {:.2} | {} | {} | {:.2e} | {:.2} | {} |",
            r.seconds,
            r.iterations,
            r.alpha.len(),
            r.certified_gap.unwrap_or(r.gap),
            acc,
            if converged {
                "converged".to_string()
            } else {
                r.stop.to_string()
            }
        );
        let _ = writeln!(
            csv,
            "{m},{:.4},{:.4},{},{},{:.4e},{:.4},\"{}\"",
            r.seconds,
            r.certify_seconds,
            r.iterations,
            r.alpha.len(),
            r.certified_gap.unwrap_or(r.gap),
            acc,
            r.stop
        );
        write_output(&a.out.join("scale.csv"), |w| w.write_all(csv.as_bytes()))?;
        if !a.quiet {
            eprintln!(
                "fwsvm: m = {m}: {:.2}s, {} iterations, {} SVs, {:.2} %",
                r.seconds,
                r.iterations,
                r.alpha.len(),
                acc
            );
        }
    }
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
    let svg = crate::svg::LineChart {
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
    }
    .render();
    write_output(&a.out.join("scale.svg"), |w| w.write_all(svg.as_bytes()))?;
    write_output(&a.out.join("scale.md"), |w| w.write_all(md.as_bytes()))?;
    print!("{md}");
    Ok(())
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
