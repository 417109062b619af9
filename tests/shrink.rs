//! Working-set shrinking with an exact finish (`fwsvm::solver::shrink`): with the working set
//! forced as small as it goes (two points, ρ = 0), every variant and ws (whose rounds start
//! with the last round's columns restricted to the new set) still reaches the reference
//! optimum with the same certified gap rule as without shrinking; on real data the two runs
//! reach the same optimum within their certified gaps and predict the same labels.

use fwsvm::backend::Device;
use fwsvm::backend::cpu::{CpuConfig, Precision};
use fwsvm::problem::Problem;
use fwsvm::solver::entry::solve_rounds;
use fwsvm::solver::shrink::ShrinkParams;
use fwsvm::solver::{Algorithm, SolverParams, StopReason};
use fwsvm::train::{TrainParams, train};

mod common;
use common::problems::{problems, reference_optimum};

const TINY: ShrinkParams = ShrinkParams {
    margin: 0.0,
    min_size: 2,
    min_points: 0,
};

#[test]
fn a_forced_tiny_working_set_still_reaches_the_optimum() {
    let cpu = CpuConfig {
        cache_bytes: 1 << 20,
        precision: Some(Precision::F64),
        batched: false,
    };
    let mut rebuilt = 0;
    for (name, ds, kernel, c, interior) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let (f_ref, _) = reference_optimum(&prob);
        for alg in Algorithm::FW
            .into_iter()
            .chain([Algorithm::Cvm, Algorithm::Ws])
        {
            let sublinear = !interior && matches!(alg, Algorithm::Fw | Algorithm::Partan);
            let target = if sublinear { 1e-5 } else { 1e-8 };
            let params = SolverParams {
                algorithm: Some(alg),
                eps: target * 0.5,
                max_iter: 2_000_000,
                seed: 5,
                init_size: 4,
                ..Default::default()
            };
            let r = solve_rounds(&prob, &Device::Cpu, cpu, &params, &TINY, &mut []).unwrap();
            let tag = format!("{name} / {alg}");
            assert_eq!(r.stop, StopReason::Converged, "{tag}");
            let gap = r.certified_gap.unwrap();
            assert!(gap <= params.eps, "{tag}: certified gap {gap}");
            let f = r.certified_f.unwrap();
            assert!(
                f >= f_ref - 1e-9 && f - f_ref <= target,
                "{tag}: f {f} vs {f_ref}"
            );
            assert!(
                (r.alpha.sum() - 1.0).abs() < 1e-9,
                "{tag}: α off the simplex"
            );
            let w = r.shrink.expect("shrink statistics");
            assert!(w.rounds >= 1 && w.last_size <= prob.len(), "{tag}: {w:?}");
            rebuilt += w.rebuilds;
        }
    }
    // The rule set points aside that the exact pass had to bring back: the finish was used.
    assert!(
        rebuilt > 0,
        "no run needed a rebuild; the test exercises nothing"
    );
}

/// A run by rounds that asks for no certificate (a warm start's subsample) leaves α's
/// gradient on every point — from its last round's backend where W held every point, from its
/// last exact pass where points were set aside (the tiny working set) — and a run that
/// certifies leaves none.
#[test]
fn a_run_without_a_certificate_leaves_its_gradient() {
    let cpu = CpuConfig {
        cache_bytes: 1 << 20,
        precision: Some(Precision::F64),
        batched: false,
    };
    let default_rule = ShrinkParams {
        min_points: 0,
        ..Default::default()
    };
    let (mut set_aside, mut whole) = (0, 0);
    for (name, ds, kernel, c, _) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        for (rule, sp) in [("default rule", default_rule), ("tiny W", TINY)] {
            let tag = format!("{name} / {rule}");
            let params = SolverParams {
                algorithm: Some(Algorithm::Ws),
                eps: 1e-7,
                seed: 5,
                init_size: 4,
                certify: false,
                ..Default::default()
            };
            let r = solve_rounds(&prob, &Device::Cpu, cpu, &params, &sp, &mut []).unwrap();
            assert_eq!(r.stop, StopReason::Converged, "{tag}");
            let g = r.gradient.as_ref().expect("the gradient is left");
            let mut exact = vec![0.0; prob.len()];
            fwsvm::backend::exact::full_gradient(&prob, &r.alpha, &mut exact);
            // Off the support the exact pass's rows may be its f32 screen's (about 1e-6 of
            // each term off).
            let scale = exact.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            for (i, (a, b)) in g.iter().zip(&exact).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * scale,
                    "{tag}: g[{i}] {a} against {b}"
                );
            }
            assert_eq!(g.len(), prob.len(), "{tag}");
            match r.shrink.map(|w| w.last_size) {
                Some(n) if n < prob.len() => set_aside += 1,
                _ => whole += 1,
            }
            let certified = SolverParams {
                certify: true,
                ..params
            };
            let r = solve_rounds(&prob, &Device::Cpu, cpu, &certified, &sp, &mut []).unwrap();
            assert!(r.gradient.is_none(), "{tag}: a certified run");
        }
    }
    // Both ends were taken: W whole (the backend's gradient) and points set aside (the exact
    // pass's).
    assert!(
        set_aside > 0 && whole > 0,
        "{set_aside} set aside, {whole} whole"
    );
}

#[test]
fn shrinking_on_and_off_agree_on_real_data() {
    let Some(path) = common::dataset("heart_scale.xz") else {
        return;
    };
    let ds = fwsvm::data::read_dataset(&path, &Default::default()).unwrap();
    for alg in [
        Algorithm::Partan,
        Algorithm::Swap2,
        Algorithm::Cvm,
        Algorithm::Ws,
    ] {
        let mut results = Vec::new();
        // The default rule, on a set far below the size where `train` turns it on by itself.
        let default_rule = ShrinkParams {
            min_points: 0,
            ..Default::default()
        };
        for sp in [None, Some(default_rule), Some(TINY)] {
            let params = TrainParams {
                c: 10.0,
                solver: SolverParams {
                    algorithm: Some(alg),
                    eps: 1e-6,
                    ..Default::default()
                },
                shrink: sp,
                ..Default::default()
            };
            let (model, reports) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
            let r = &reports[0].result;
            assert_eq!(r.stop, StopReason::Converged, "{alg} {sp:?}");
            assert_eq!(r.shrink.is_some(), sp.is_some());
            results.push((
                r.certified_f.unwrap(),
                r.certified_gap.unwrap(),
                model.predict(&ds),
            ));
        }
        let (f0, gap0, ref labels0) = results[0];
        for (f, gap, labels) in &results[1..] {
            // f ≥ f* ≥ f − gap/2 for both runs: their objectives differ by at most the gaps.
            assert!(
                (f - f0).abs() <= 0.5 * (gap + gap0),
                "{alg}: f {f} vs {f0} (gaps {gap}, {gap0})"
            );
            let same = labels.iter().zip(labels0).filter(|(a, b)| a == b).count();
            assert!(
                same as f64 >= 0.99 * labels0.len() as f64,
                "{alg}: {same} of {} labels agree",
                labels0.len()
            );
        }
    }
}
