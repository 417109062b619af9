//! What `fwsvm bench` writes once the matrix has run: the results CSV, the Markdown table in
//! the layout of Frandi, Ñanculef, Suykens, *A PARTAN-Accelerated Frank-Wolfe Algorithm for
//! Large-Scale SVM Classification* (2015), with the statistical tests of Ñanculef, Frandi,
//! Sartori, Allende, *A Novel Frank-Wolfe Algorithm. Analysis and Applications to Large-Scale
//! SVM Training* (2014), and the SVG plots.

use super::matrix::{Plan, Run, dataset_name};
use super::stats::{friedman, wilcoxon};
use fwsvm::error::Result;
use fwsvm::output::write_output;
use fwsvm::solver::Algorithm;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Writes the runs as the results CSV (one line per run).
pub fn write_csv(path: &Path, runs: &[Run]) -> Result<()> {
    write_output(path, |w| {
        writeln!(
            w,
            "dataset,backend,eps,algorithm,repeat,seed,seconds,certify_seconds,iterations,svs,certified_gap,objective,accuracy,stop"
        )?;
        for r in runs {
            writeln!(
                w,
                "{},{},{:e},{},{},{},{:.4},{:.4},{},{},{:.4e},{:.9e},{:.4},\"{}\"",
                r.dataset,
                r.backend,
                r.eps,
                r.algorithm,
                r.repeat,
                r.seed,
                r.seconds,
                r.certify,
                r.iterations,
                r.svs,
                r.gap,
                r.objective,
                r.accuracy,
                r.stop
            )?;
        }
        Ok(())
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// Mean of `f` over the repeats of one cell.
fn cell(
    runs: &[Run],
    ds: &str,
    b: &str,
    eps: f64,
    alg: Algorithm,
    f: impl Fn(&Run) -> f64,
) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.dataset == ds && r.backend == b && r.eps == eps && r.algorithm == alg)
        .map(f)
        .collect()
}

/// The Markdown report: the table of Frandi et al. (2015) per backend and ε, and the tests of
/// Ñanculef et al. (2014) with three datasets or more.
pub fn report(plan: &Plan, runs: &[Run], backends: &[&str]) -> String {
    let mut s = String::new();
    let names: Vec<String> = plan.datasets.iter().map(dataset_name).collect();
    let _ = writeln!(
        s,
        "# fwsvm bench\n\n{} algorithm(s) × {} dataset(s) × {} backend(s) × ε ∈ {{{}}}, {} repeat(s) (seeds {}…{}); seconds = solver time (initialisation + iterations), mean ± sd over the repeats{}.\n",
        plan.algorithms.len(),
        names.len(),
        backends.len(),
        plan.eps
            .iter()
            .map(|e| format!("{e:e}"))
            .collect::<Vec<_>>()
            .join(", "),
        plan.repeats,
        plan.seed,
        plan.seed + plan.repeats as u64 - 1,
        if plan.algorithms.contains(&Algorithm::Fw) {
            "; speed-up = fw's seconds / the variant's"
        } else {
            ""
        }
    );
    for &b in backends {
        for &eps in &plan.eps {
            let _ = writeln!(s, "## {b}, ε = {eps:e}\n");
            // Table 2 of Frandi et al. (2015): algorithms across, a block of rows per dataset.
            let _ = writeln!(
                s,
                "| | {} |\n|---|{}",
                plan.algorithms
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(" | "),
                "---|".repeat(plan.algorithms.len())
            );
            for ds in &names {
                dataset_rows(&mut s, plan, runs, ds, b, eps);
            }
            let _ = writeln!(
                s,
                "\n(* a run ended by something other than the stop rule: --time-limit, the iteration cap or a stall.)"
            );
            s.push('\n');
            if names.len() >= 3 && plan.algorithms.len() >= 2 {
                stats_section(&mut s, plan, runs, &names, b, eps);
            }
        }
    }
    if names.len() < 3 {
        let _ = writeln!(
            s,
            "(The Friedman and Wilcoxon tests need three datasets or more.)"
        );
    }
    s
}

/// One dataset's block of rows in a backend's and ε's table (Table 2 of Frandi et al. 2015).
fn dataset_rows(s: &mut String, plan: &Plan, runs: &[Run], ds: &str, b: &str, eps: f64) {
    let has_fw = plan.algorithms.contains(&Algorithm::Fw);
    let fw = mean(&cell(runs, ds, b, eps, Algorithm::Fw, |r| r.seconds));
    let row = |label: &str, f: &dyn Fn(Algorithm) -> String| {
        let cells: Vec<String> = plan.algorithms.iter().map(|&a| f(a)).collect();
        format!("| {label} | {} |\n", cells.join(" | "))
    };
    let _ = writeln!(s, "| **{ds}** |{}", " |".repeat(plan.algorithms.len()));
    let stat = |alg: Algorithm, f: fn(&Run) -> f64| cell(runs, ds, b, eps, alg, f);
    s.push_str(&row("Acc (%)", &|a| {
        mean_or_dash(&stat(a, |r| r.accuracy), |m| format!("{:.2}", m))
    }));
    s.push_str(&row("Time (s)", &|a| {
        let v = stat(a, |r| r.seconds);
        if v.is_empty() {
            return "–".into();
        }
        let capped = runs.iter().any(|r| {
            r.dataset == *ds
                && r.backend == b
                && r.eps == eps
                && r.algorithm == a
                && !r.stop.starts_with("converged")
        });
        format!(
            "{:.3}{}{}",
            mean(&v),
            if v.len() > 1 {
                format!(" ± {:.3}", sd(&v))
            } else {
                String::new()
            },
            if capped { " *" } else { "" }
        )
    }));
    if has_fw {
        s.push_str(&row("Speed-up vs fw", &|a| {
            let v = stat(a, |r| r.seconds);
            if v.is_empty() || !(fw > 0.0) {
                "–".into()
            } else {
                format!("{:.2}×", fw / mean(&v))
            }
        }));
    }
    s.push_str(&row("Iter", &|a| {
        mean_or_dash(&stat(a, |r| r.iterations as f64), |m| format!("{:.0}", m))
    }));
    s.push_str(&row("SVs", &|a| {
        mean_or_dash(&stat(a, |r| r.svs as f64), |m| format!("{:.0}", m))
    }));
    s.push_str(&row("Certified gap", &|a| {
        mean_or_dash(&stat(a, |r| r.gap), |m| format!("{:.2e}", m))
    }));
}

/// `show` of the mean of `v`, or "–" when there are no runs.
fn mean_or_dash(v: &[f64], show: impl Fn(f64) -> String) -> String {
    if v.is_empty() {
        "–".into()
    } else {
        show(mean(v))
    }
}

fn stats_section(s: &mut String, plan: &Plan, runs: &[Run], names: &[String], b: &str, eps: f64) {
    for (what, lower, f) in [
        ("seconds", true, (|r: &Run| r.seconds) as fn(&Run) -> f64),
        ("test accuracy", false, |r: &Run| r.accuracy),
    ] {
        let scores: Vec<Vec<f64>> = names
            .iter()
            .map(|ds| {
                plan.algorithms
                    .iter()
                    .map(|&a| mean(&cell(runs, ds, b, eps, a, f)))
                    .collect()
            })
            .collect();
        let Some(fr) = friedman(&scores, lower) else {
            continue;
        };
        let _ = writeln!(
            s,
            "Friedman test on {what} ({} datasets, rank 1 = {}): average ranks {}; χ²_F = {:.3}, Iman–Davenport F_F = {:.3} with ({}, {}) degrees of freedom, p = {:.4}.\n",
            names.len(),
            if lower { "fastest" } else { "most accurate" },
            plan.algorithms
                .iter()
                .zip(&fr.avg_ranks)
                .map(|(a, r)| format!("{a} {r:.2}"))
                .collect::<Vec<_>>()
                .join(", "),
            fr.chi2,
            fr.f,
            fr.df.0,
            fr.df.1,
            fr.p
        );
        let _ = writeln!(
            s,
            "Wilcoxon signed-rank tests on {what} (exact two-sided p; W+ / W− = sums of the ranks of the |differences| where the first algorithm's {what} is higher / lower; n = datasets with a difference):\n\n| pair | W+ | W− | n | p |\n|---|---|---|---|---|"
        );
        for i in 0..plan.algorithms.len() {
            for j in i + 1..plan.algorithms.len() {
                let a: Vec<f64> = scores.iter().map(|r| r[i]).collect();
                let bb: Vec<f64> = scores.iter().map(|r| r[j]).collect();
                let w = wilcoxon(&a, &bb);
                let _ = writeln!(
                    s,
                    "| {} vs {} | {} | {} | {} | {:.4} |",
                    plan.algorithms[i],
                    plan.algorithms[j],
                    w.w_plus + 0.0,
                    w.w_minus + 0.0,
                    w.n,
                    w.p
                );
            }
        }
        s.push('\n');
    }
}

/// Writes the plots into `out`: duality gap against seconds per dataset, and each variant's
/// speed-up over fw.
pub fn plots(out: &Path, plan: &Plan, runs: &[Run], backends: &[&str]) -> Result<()> {
    let names: Vec<String> = plan.datasets.iter().map(dataset_name).collect();
    for &b in backends {
        for &eps in &plan.eps {
            for ds in &names {
                let series: Vec<(String, Vec<(f64, f64)>)> = plan
                    .algorithms
                    .iter()
                    .filter_map(|&alg| {
                        runs.iter()
                            .find(|r| {
                                r.dataset == *ds
                                    && r.backend == b
                                    && r.eps == eps
                                    && r.algorithm == alg
                                    && r.repeat == 0
                            })
                            .map(|r| (alg.to_string(), r.trace.clone()))
                    })
                    .collect();
                let title = format!("{ds}: duality gap vs seconds ({b}, ε = {eps:e})");
                let svg = super::charts::LineChart {
                    title: &title,
                    x_name: "seconds",
                    y_name: "duality gap",
                    series,
                    log_x: false,
                    fit: None,
                }
                .render()?;
                let file = out.join(format!("gap_{ds}_{b}_{eps:e}.svg"));
                write_output(&file, |w| w.write_all(svg.as_bytes()))?;
            }
            if plan.algorithms.contains(&Algorithm::Fw) {
                let series = plan
                    .algorithms
                    .iter()
                    .map(|&alg| {
                        let v = names
                            .iter()
                            .map(|ds| {
                                let fw =
                                    mean(&cell(runs, ds, b, eps, Algorithm::Fw, |r| r.seconds));
                                let me = mean(&cell(runs, ds, b, eps, alg, |r| r.seconds));
                                (fw > 0.0 && me > 0.0).then(|| fw / me)
                            })
                            .collect();
                        (alg.to_string(), v)
                    })
                    .collect();
                let title = format!("speed-up over fw ({b}, ε = {eps:e})");
                let svg = super::charts::BarChart {
                    title: &title,
                    y_name: "fw seconds / variant seconds",
                    groups: names.clone(),
                    series,
                    reference: Some(1.0),
                }
                .render()?;
                let file = out.join(format!("speedup_{b}_{eps:e}.svg"));
                write_output(&file, |w| w.write_all(svg.as_bytes()))?;
            }
        }
    }
    Ok(())
}
