//! The working-set solver (`-a ws`): with working sets forced small (q = 2 and 8, so every
//! outer iteration solves a restricted problem and most points wait outside W) it reaches the
//! independently computed optimum of every test problem; on rows repeated many times (the
//! grouped CPU layout) and on heart_scale it reaches the optimum the per-iteration SWAP-2o
//! reaches, within the certified gaps; and the batched gradient update it relies on gives the
//! numbers of updates by pairs, bit for bit.

use fwsvm::backend::Device;
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::backend::update_by_pairs;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::{Algorithm, Progress, SolverParams, StopReason, solve};

mod common;
use common::problems::{problems, random_dataset, reference_optimum};

fn cpu(precision: Precision) -> CpuConfig {
    CpuConfig {
        cache_bytes: 1 << 20,
        precision: Some(precision),
        batched: false,
    }
}

#[test]
fn small_working_sets_reach_the_reference_optimum() {
    for (name, ds, kernel, c, _) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let (f_ref, a_ref) = reference_optimum(&prob);
        for q in [2, 8] {
            let params = SolverParams {
                algorithm: Some(Algorithm::Ws),
                ws_size: q,
                eps: 5e-9,
                max_iter: 1_000_000,
                seed: 5,
                init_size: 4,
                ..Default::default()
            };
            let mut be = cpu_backend(&prob, cpu(Precision::F64));
            let mut last_f = f64::INFINITY;
            let mut monotone = true;
            let mut obs = |p: &Progress| {
                if p.f > last_f + 1e-14 * last_f.abs().max(1e-300) {
                    monotone = false;
                }
                last_f = p.f;
            };
            let r = solve(&prob, be.as_mut(), &params, &mut [&mut obs]).unwrap();
            let tag = format!("{name} / q = {q}");
            assert_eq!(r.stop, StopReason::Converged, "{tag}");
            assert!(r.iterations > 1, "{tag}: one block solved everything");
            let gap = r.certified_gap.unwrap();
            assert!(gap <= 1e-8, "{tag}: certified gap {gap}");
            let f = r.certified_f.unwrap();
            assert!(
                f >= f_ref - 1e-9 && f - f_ref <= 1e-8,
                "{tag}: f {f} vs reference {f_ref}"
            );
            assert!(monotone, "{tag}: f increased");
            assert!((r.alpha.sum() - 1.0).abs() < 1e-10, "{tag}: Σα");
            let dist: f64 = (0..prob.len())
                .map(|i| (r.alpha.get(i) - a_ref[i]).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(dist < 1e-3, "{tag}: ‖α − α_ref‖ = {dist}");
        }
    }
}

/// ws and SWAP-2o on one problem, f64 columns, to a tight gap: the same optimum within the sum
/// of their certified gaps, and the same labels on the training points.
fn same_optimum(prob: &Problem<'_>, q: usize, tag: &str) {
    let run = |alg: Algorithm| {
        let params = SolverParams {
            algorithm: Some(alg),
            ws_size: q,
            eps: 1e-9,
            rel_eps: Some(f64::INFINITY),
            max_iter: 2_000_000,
            seed: 3,
            ..Default::default()
        };
        let mut be = cpu_backend(prob, cpu(Precision::F64));
        solve(prob, be.as_mut(), &params, &mut []).unwrap()
    };
    let (ws, sw) = (run(Algorithm::Ws), run(Algorithm::Swap2));
    for r in [&ws, &sw] {
        assert_eq!(r.stop, StopReason::Converged, "{tag}");
    }
    let (gw, gs) = (ws.certified_gap.unwrap(), sw.certified_gap.unwrap());
    let (fw, fs) = (ws.certified_f.unwrap(), sw.certified_f.unwrap());
    assert!(
        (fw - fs).abs() <= gw + gs,
        "{tag}: f {fw} (gap {gw}) vs swap2 {fs} (gap {gs})"
    );
    // Decision values F(x_i) = y_i (g_i − α_i/C) from the exact gradients of both α.
    let (mut g1, mut g2) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
    fwsvm::backend::exact::full_gradient(prob, &ws.alpha, &mut g1);
    fwsvm::backend::exact::full_gradient(prob, &sw.alpha, &mut g2);
    let differ = (0..prob.len())
        .filter(|&i| {
            let f1 = g1[i] - ws.alpha.get(i) * prob.inv_c(i);
            let f2 = g2[i] - sw.alpha.get(i) * prob.inv_c(i);
            (f1 > 0.0) != (f2 > 0.0)
        })
        .count();
    assert!(differ <= prob.len() / 500, "{tag}: {differ} labels differ");
}

#[test]
fn repeated_rows_and_heart_scale_give_the_per_iteration_optimum() {
    // 40 patterns repeated to 5,000 rows with random labels: the grouped CPU layout.
    let pat = random_dataset(40, 6, false, 31);
    let mut r = fwsvm::rng::SplitMix64::new(9);
    let rows: Vec<usize> = (0..5000).map(|_| r.below(40)).collect();
    let mut ds = pat.subset(&rows);
    ds.labels = (0..5000)
        .map(|_| if r.next_f64() < 0.5 { 1.0 } else { -1.0 })
        .collect();
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 2.0).unwrap();
    assert!(prob.distinct_rows().is_some(), "the rows should be grouped");
    for q in [4, 64] {
        same_optimum(&prob, q, &format!("repeated rows, q = {q}"));
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/heart_scale.xz");
    let heart = fwsvm::data::read_libsvm(&path).unwrap();
    let prob = Problem::new(
        &heart,
        heart.labels.clone(),
        Kernel::Rbf { gamma: 0.2 },
        10.0,
    )
    .unwrap();
    for q in [16, 0] {
        same_optimum(&prob, q, &format!("heart_scale, q = {q}"));
    }
}

#[test]
fn the_batched_update_equals_updates_by_pairs() {
    let pat = random_dataset(50, 7, true, 41);
    let mut r = fwsvm::rng::SplitMix64::new(4);
    let rows: Vec<usize> = (0..5000).map(|_| r.below(50)).collect();
    let mut grouped = pat.subset(&rows);
    grouped.labels = (0..5000)
        .map(|_| if r.next_f64() < 0.5 { 1.0 } else { -1.0 })
        .collect();
    let plain = random_dataset(5000, 7, true, 42);
    for (tag, ds) in [("grouped", &grouped), ("plain", &plain)] {
        let prob = Problem::new(ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.3 }, 3.0).unwrap();
        assert_eq!(prob.distinct_rows().is_some(), tag == "grouped", "{tag}");
        for precision in [Precision::F32, Precision::F64] {
            let mut a = cpu_backend(&prob, cpu(precision));
            let mut b = cpu_backend(&prob, cpu(precision));
            let mut alpha = fwsvm::active::ActiveSet::new(prob.len());
            alpha.set(5, 0.5);
            alpha.set(1200, 0.5);
            a.set_alpha(&alpha).unwrap();
            b.set_alpha(&alpha).unwrap();
            // Seven columns (an odd count), some repeated patterns, a scale.
            let cols: Vec<(usize, f64)> = [3, 5, 77, 1200, 1900, 2100, 4999]
                .iter()
                .enumerate()
                .map(|(k, &j)| {
                    (
                        j,
                        0.01 * (k as f64 + 1.0) * if k % 2 == 0 { 1.0 } else { -1.0 },
                    )
                })
                .collect();
            a.update_many(0.75, &cols).unwrap();
            update_by_pairs(b.as_mut(), 0.75, &cols).unwrap();
            let all: Vec<usize> = (0..prob.len()).collect();
            let (mut ga, mut gb) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
            a.gather(&all, &mut ga).unwrap();
            b.gather(&all, &mut gb).unwrap();
            for i in 0..prob.len() {
                assert_eq!(
                    ga[i].to_bits(),
                    gb[i].to_bits(),
                    "{tag} {precision:?}: row {i}"
                );
            }
            let (ra, rb) = (a.reduce(&alpha).unwrap(), b.reduce(&alpha).unwrap());
            assert_eq!(ra, rb, "{tag} {precision:?}: reductions");
        }
    }
}

/// ws on 20,000 points or more starts from a subsample solved first and extended to all by
/// the optimality condition (`solver::warm`): on non-separable data (a tenth of the labels
/// flipped), where most points are support vectors, it reaches the cold start's optimum within
/// the certified gaps, in fewer outer iterations, and reports what the warm start did. There
/// the tenth holds mostly support vectors, so the warm start climbs the ladder (a half solved
/// first); on the same board without flipped labels, few support vectors, it keeps the tenth.
#[test]
fn the_warm_start_reaches_the_cold_optimum() {
    let mut ds = fwsvm::data::synth::checkerboard(24_000, 4, 3);
    let mut r = fwsvm::rng::SplitMix64::new(11);
    for l in ds.labels.iter_mut() {
        if r.next_f64() < 0.1 {
            *l = -*l;
        }
    }
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 1.0).unwrap();
    let run = |warm_start: bool| {
        let params = SolverParams {
            algorithm: Some(Algorithm::Ws),
            rel_eps: Some(0.02),
            warm_start,
            ..Default::default()
        };
        fwsvm::solver::entry::solve_on(
            &prob,
            &Device::Cpu,
            cpu(Precision::F32),
            &params,
            None,
            &mut [],
        )
        .unwrap()
    };
    let clean = fwsvm::data::synth::checkerboard(24_000, 4, 3);
    let clean_prob = Problem::new(
        &clean,
        clean.labels.clone(),
        Kernel::Rbf { gamma: 1.0 },
        1.0,
    )
    .unwrap();
    let tenth = fwsvm::solver::entry::solve_on(
        &clean_prob,
        &Device::Cpu,
        cpu(Precision::F32),
        &SolverParams {
            algorithm: Some(Algorithm::Ws),
            ..Default::default()
        },
        None,
        &mut [],
    )
    .unwrap()
    .warm
    .expect("a warm start on 24,000 points");
    assert_eq!((tenth.points, tenth.ratio), (2_400, 10), "{tenth:?}");
    assert!(tenth.sub_support * 3 < tenth.points * 2, "{tenth:?}");
    let (warm, cold) = (run(true), run(false));
    let stats = warm.warm.expect("a warm start on 24,000 points");
    assert_eq!((stats.points, stats.ratio), (12_000, 2), "{stats:?}");
    assert!(
        stats.support > stats.points,
        "the start covers more than the subsample: {stats:?}"
    );
    // The cap: the subsample's support grown by the exponent its nested half shows.
    assert!(stats.support <= stats.cap, "{stats:?}");
    assert!((0.5..=1.0).contains(&stats.growth), "{stats:?}");
    assert!(
        0 < stats.half_support && stats.half_support < stats.sub_support,
        "{stats:?}"
    );
    let want = stats.sub_support as f64 * (stats.ratio as f64).powf(stats.growth);
    assert!((stats.cap as f64 - want).abs() <= 1.0, "{stats:?}");
    assert!(cold.warm.is_none());
    for (tag, r) in [("warm", &warm), ("cold", &cold)] {
        assert_eq!(r.stop, StopReason::Converged, "{tag}");
        assert!((r.alpha.sum() - 1.0).abs() < 1e-9, "{tag}: Σα");
    }
    let (fw, gw) = (warm.certified_f.unwrap(), warm.certified_gap.unwrap());
    let (fc, gc) = (cold.certified_f.unwrap(), cold.certified_gap.unwrap());
    assert!(
        (fw - fc).abs() <= gw.max(gc),
        "warm f {fw} (gap {gw}) and cold f {fc} (gap {gc}) cannot both be that close to f*"
    );
    assert!(
        warm.iterations < cold.iterations,
        "warm {} outer iterations, cold {}",
        warm.iterations,
        cold.iterations
    );
}
