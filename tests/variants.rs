//! Every variant on small random problems: reaches a certified gap ≤ 1e-8, matches an optimum
//! computed independently here (accelerated projected gradient on the simplex), keeps α on the
//! simplex, decreases f monotonically, and is reproducible bit for bit from its seed.

use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::data::Dataset;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::rng::SplitMix64;
use fwsvm::solver::{Algorithm, Progress, SolverParams, StopReason, solve};

fn random_dataset(m: usize, d: usize, sparse: bool, seed: u64) -> Dataset {
    let mut r = SplitMix64::new(seed);
    let (mut ip, mut ix, mut vs, mut y) = (vec![0usize], Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        let label = if i % 3 == 0 { 1.0 } else { -1.0 };
        for f in 0..d {
            if !sparse || r.next_f64() < 0.35 {
                ix.push(f as u32);
                let shift = if f == 0 { 0.7 * label } else { 0.0 };
                vs.push((r.next_f64() * 2.0 - 1.0 + shift) as f32);
            }
        }
        ip.push(ix.len());
        y.push(label);
    }
    Dataset::from_csr(d, ip, ix, vs, y)
}

/// Euclidean projection onto the unit simplex (sort-based).
fn project_simplex(v: &mut [f64]) {
    let mut u = v.to_vec();
    u.sort_by(|a, b| b.total_cmp(a));
    let (mut css, mut theta) = (0.0, 0.0);
    for (k, &x) in u.iter().enumerate() {
        css += x;
        let t = (css - 1.0) / (k as f64 + 1.0);
        if x - t > 0.0 {
            theta = t;
        }
    }
    v.iter_mut().for_each(|x| *x = (*x - theta).max(0.0));
}

/// min ½αᵀQα on the simplex by FISTA with exact Q — independent of the library's solvers.
fn reference_optimum(prob: &Problem<'_>) -> (f64, Vec<f64>) {
    let m = prob.len();
    let q: Vec<f64> = (0..m * m).map(|k| prob.q(k / m, k % m)).collect();
    let grad = |a: &[f64]| -> Vec<f64> {
        (0..m)
            .map(|i| (0..m).map(|j| q[i * m + j] * a[j]).sum())
            .collect()
    };
    // Lipschitz constant: Gershgorin bound on the largest eigenvalue.
    let l = (0..m)
        .map(|i| (0..m).map(|j| q[i * m + j].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut x = vec![1.0 / m as f64; m];
    let mut yv = x.clone();
    let mut t = 1.0f64;
    for _ in 0..60_000 {
        let g = grad(&yv);
        let mut xn: Vec<f64> = yv.iter().zip(&g).map(|(a, b)| a - b / l).collect();
        project_simplex(&mut xn);
        let tn = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        yv = xn
            .iter()
            .zip(&x)
            .map(|(a, b)| a + (t - 1.0) / tn * (a - b))
            .collect();
        x = xn;
        t = tn;
    }
    let g = grad(&x);
    (0.5 * x.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>(), x)
}

/// (name, data, kernel, C, interior): with a small C every point is a support vector and the
/// optimum lies inside the simplex, where plain FW converges linearly; elsewhere the optimum is
/// sparse and FW is O(1/k) (paper 004, Table 3), so only the variants with away, pairwise or
/// PARTAN steps are asked for 1e-8 there.
fn problems() -> Vec<(String, Dataset, Kernel, f64, bool)> {
    vec![
        (
            "rbf dense, interior".into(),
            random_dataset(70, 5, false, 15),
            Kernel::Rbf { gamma: 0.8 },
            0.02,
            true,
        ),
        (
            "poly sparse, interior".into(),
            random_dataset(60, 9, true, 16),
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
            0.01,
            true,
        ),
        (
            "rbf dense".into(),
            random_dataset(70, 5, false, 11),
            Kernel::Rbf { gamma: 0.8 },
            10.0,
            false,
        ),
        (
            "rbf sparse".into(),
            random_dataset(60, 9, true, 12),
            Kernel::Rbf { gamma: 0.5 },
            1.0,
            false,
        ),
        (
            "poly dense".into(),
            random_dataset(50, 4, false, 13),
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
            5.0,
            false,
        ),
        (
            "linear sparse".into(),
            random_dataset(55, 8, true, 14),
            Kernel::Linear,
            100.0,
            false,
        ),
    ]
}

#[test]
fn every_variant_reaches_the_reference_optimum() {
    let mut sparse_optima = 0;
    for (name, ds, kernel, c, interior) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let (f_ref, a_ref) = reference_optimum(&prob);
        let support = a_ref.iter().filter(|&&a| a > 1e-9).count();
        if interior {
            assert_eq!(
                support,
                prob.len(),
                "{name}: the optimum should be interior"
            );
        } else {
            assert!(support < prob.len(), "{name}: the optimum should be sparse");
            sparse_optima += 1;
        }
        for alg in Algorithm::ALL {
            // FW and PARTAN are O(1/k) in the gap when the optimum is sparse (paper 004, §4 and
            // Table 3): there they are held to 1e-5; everything else to 1e-8.
            let sublinear = !interior && matches!(alg, Algorithm::Fw | Algorithm::Partan);
            let target = if sublinear { 1e-5 } else { 1e-8 };
            let params = SolverParams {
                algorithm: alg,
                eps: target * 0.5,
                max_iter: 2_000_000,
                seed: 5,
                init_size: 4,
                ..Default::default()
            };
            let mut be = cpu_backend(
                &prob,
                CpuConfig {
                    cache_bytes: 1 << 20,
                    precision: Precision::F64,
                },
            );
            let mut last_f = f64::INFINITY;
            let mut monotone = true;
            let mut obs = |p: &Progress| {
                if p.f > last_f + 1e-14 * last_f.abs().max(1e-300) {
                    monotone = false;
                }
                last_f = p.f;
            };
            let r = solve(&prob, be.as_mut(), &params, &mut [&mut obs]).unwrap();
            let tag = format!("{name} / {alg}");
            assert_eq!(r.stop, StopReason::Converged, "{tag}: {:?}", r.stop);
            let gap = r.certified_gap.unwrap();
            assert!(gap <= target, "{tag}: certified gap {gap}");
            let f = r.certified_f.unwrap();
            assert!(
                f >= f_ref - 1e-9,
                "{tag}: f {f} below the reference optimum {f_ref}"
            );
            assert!(f - f_ref <= target, "{tag}: f {f} vs reference {f_ref}");
            assert!(monotone, "{tag}: f increased during the run");
            // α on the simplex, and close to the reference solution (strictly convex problem).
            let sum: f64 = r.alpha.iter().map(|(_, a)| a).sum();
            assert!((sum - 1.0).abs() < 1e-10, "{tag}: Σα = {sum}");
            assert!(r.alpha.iter().all(|(_, a)| a > 0.0));
            let dist: f64 = (0..prob.len())
                .map(|i| (r.alpha.get(i) - a_ref[i]).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(
                dist < if sublinear { 3e-2 } else { 1e-3 },
                "{tag}: ‖α − α_ref‖ = {dist}"
            );
            // The tracked objective agrees with the exact one.
            assert!(
                (r.f - f).abs() <= 1e-12 + 1e-9 * f.abs(),
                "{tag}: tracked f {} vs exact {f}",
                r.f
            );
        }
    }
    assert!(sparse_optima >= 3);
}

#[test]
fn runs_are_reproducible_bit_for_bit() {
    let ds = random_dataset(3000, 12, false, 21);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.3 }, 3.0).unwrap();
    for alg in Algorithm::ALL {
        let run = || {
            let params = SolverParams {
                algorithm: alg,
                eps: 1e-5,
                seed: 42,
                ..Default::default()
            };
            let mut be = cpu_backend(&prob, CpuConfig::default());
            let mut trace = Vec::new();
            let mut obs = |p: &Progress| trace.push((p.f.to_bits(), p.gap.to_bits(), p.active));
            let r = solve(&prob, be.as_mut(), &params, &mut [&mut obs]).unwrap();
            let mut a: Vec<(usize, u64)> = r.alpha.iter().map(|(i, v)| (i, v.to_bits())).collect();
            a.sort();
            (a, trace, r.iterations)
        };
        let (a1, t1, i1) = run();
        let (a2, t2, i2) = run();
        assert_eq!(i1, i2, "{alg}");
        assert_eq!(t1, t2, "{alg}: traces differ");
        assert_eq!(a1, a2, "{alg}: α differs");
    }
}

#[test]
fn stop_rules_are_reported() {
    let ds = random_dataset(2000, 6, false, 31);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 10.0).unwrap();
    let mut be = cpu_backend(&prob, CpuConfig::default());
    let params = SolverParams {
        eps: 1e-12,
        max_iter: 25,
        ..Default::default()
    };
    let r = solve(&prob, be.as_mut(), &params, &mut []).unwrap();
    assert_eq!(r.stop, StopReason::MaxIter);
    assert_eq!(r.iterations, 25);
    let params = SolverParams {
        eps: 1e-14,
        time_limit: Some(std::time::Duration::from_millis(50)),
        ..Default::default()
    };
    let mut be = cpu_backend(&prob, CpuConfig::default());
    let r = solve(&prob, be.as_mut(), &params, &mut []).unwrap();
    assert!(
        matches!(r.stop, StopReason::TimeLimit | StopReason::Stalled),
        "{:?}",
        r.stop
    );
}

#[test]
fn bad_parameters_are_rejected() {
    let ds = random_dataset(20, 3, false, 41);
    assert!(Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 0.0).is_err());
    assert!(Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: -1.0 }, 1.0).is_err());
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 1.0).unwrap();
    let mut be = cpu_backend(&prob, CpuConfig::default());
    let params = SolverParams {
        eps: 0.0,
        ..Default::default()
    };
    assert!(solve(&prob, be.as_mut(), &params, &mut []).is_err());
}
