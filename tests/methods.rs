//! The papers' other solvers: CVM, sparse re-weighted FW and SimpleSVM — their defining
//! properties on small problems, and the sparse FW's claims on real data (Alaíz, Fanuel,
//! Suykens, *Modified Frank-Wolfe Algorithm for Enhanced Sparsity in Support Vector Machine
//! Classifiers*, 2017: fewer support vectors than FW/PARTAN at comparable accuracy, less
//! sensitivity to C).

mod common;

use common::problems::{random_dataset, reference_optimum};
use fwsvm::active::ActiveSet;
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::backend::exact::full_gradient;
use fwsvm::backend::{Marks, mark};
use fwsvm::data::{Dataset, ReadOptions, read_dataset};
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::simple_svm::{LinearSolver, SimpleParams, Violator};
use fwsvm::solver::{
    Algorithm, Observer, Progress, SolveResult, SolverParams, StepKind, StopReason, StopRule,
    solve, solve_from,
};
use fwsvm::train::{Gamma, TrainParams, train};

fn f64_backend<'a>(prob: &'a Problem<'a>) -> Box<dyn Marks + 'a> {
    cpu_backend(
        prob,
        CpuConfig {
            cache_bytes: 8 << 20,
            precision: Some(Precision::F64),
            batched: false,
        },
    )
}

/// The marked reduction against a direct scan, ties to the lowest index.
#[test]
fn marked_reduction_matches_a_scan() {
    let ds = random_dataset(700, 5, false, 3);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 2.0).unwrap();
    let mut be = f64_backend(&prob);
    let mut alpha = ActiveSet::new(prob.len());
    for (k, i) in [3usize, 50, 411, 699].into_iter().enumerate() {
        alpha.set(i, 0.1 + 0.2 * k as f64);
    }
    be.set_alpha(&alpha).unwrap();
    let mut g = vec![0.0; prob.len()];
    full_gradient(&prob, &alpha, &mut g);
    let marks: Vec<u8> = (0..prob.len()).map(|i| (i * 7 % 8) as u8).collect();
    be.fill_marks(mark::LOW).unwrap();
    let changes: Vec<(usize, u8)> = marks.iter().copied().enumerate().collect();
    be.set_marks(&changes).unwrap();
    for shift in [0.0, 0.37, -2.0] {
        let r = be.reduce_marked(shift).unwrap();
        let h = |i: usize| g[i] + shift * prob.y[i];
        let scan = |bit: u8, max: bool| {
            let mut best = (
                usize::MAX,
                if max {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
            );
            for (i, &mark) in marks.iter().enumerate().take(prob.len()) {
                if mark & bit == 0 {
                    continue;
                }
                let better = if max { h(i) > best.1 } else { h(i) < best.1 };
                if better {
                    best = (i, h(i));
                }
            }
            best
        };
        assert_eq!(r.low.0, scan(mark::LOW, false).0);
        assert_eq!(r.mid.0, scan(mark::MID, false).0);
        assert_eq!(r.high.0, scan(mark::HIGH, true).0);
        assert!((r.low.1 - scan(mark::LOW, false).1).abs() < 1e-12);
    }
    // an empty set reports usize::MAX
    be.fill_marks(mark::LOW).unwrap();
    let r = be.reduce_marked(0.0).unwrap();
    assert_eq!(r.mid.0, usize::MAX);
    assert_eq!(r.high.0, usize::MAX);
}

/// Sparse FW ends at the exact L2-SVM of the subsample it activated (the lemma of Alaíz et
/// al. 2017): its objective equals an independent optimum of the problem restricted to those
/// points, and no point left out has a negative gradient (none is misclassified).
#[test]
fn sparse_fw_solves_the_l2svm_of_its_subsample() {
    for (seed, c) in [(11u64, 1.0), (12, 10.0), (13, 0.3)] {
        let ds = random_dataset(400, 4, false, seed);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, c).unwrap();
        let params = SolverParams {
            algorithm: Some(Algorithm::SparseFw),
            eps: 1e-9,
            seed,
            ..Default::default()
        };
        let mut be = f64_backend(&prob);
        let r = solve(&prob, be.as_mut(), &params, &mut []).unwrap();
        assert_eq!(r.stop, StopReason::Converged, "seed {seed}");
        let mut g = vec![0.0; prob.len()];
        full_gradient(&prob, &r.alpha, &mut g);
        let f = 0.5 * r.alpha.iter().map(|(i, a)| a * g[i]).sum::<f64>();
        // The subsample: every point whose gradient is at the active level or was activated.
        // It is not reported directly; its defining properties are: (1) supp α's points have
        // g_i within ε of min over them (optimal on the support) and (2) no g_i < 0 anywhere.
        let gmin = g.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(
            gmin >= -1e-9,
            "seed {seed}: a misclassified point was left out ({gmin})"
        );
        let on_supp: Vec<f64> = r.alpha.indices().iter().map(|&i| g[i]).collect();
        let (lo, hi) = on_supp
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        assert!(
            hi - lo <= 1e-8,
            "seed {seed}: support not at one level ({lo}, {hi})"
        );
        // The same objective as the exact optimum of the problem restricted to the support
        // plus the points whose gradient the run drove below the support's level.
        let rows: Vec<usize> = (0..prob.len()).filter(|&i| r.alpha.get(i) > 0.0).collect();
        let sub = ds.subset(&rows);
        let sub_prob = Problem::new(
            &sub,
            rows.iter().map(|&i| prob.y[i]).collect(),
            prob.kernel,
            c,
        )
        .unwrap();
        let (f_sub, _) = reference_optimum(&sub_prob);
        assert!(
            (f - f_sub).abs() <= 1e-7 * f_sub.max(1e-12),
            "seed {seed}: f {f} vs the subsample's optimum {f_sub}"
        );
        // fewer support vectors than the full L2-SVM's optimum
        let (_, a_full) = reference_optimum(&prob);
        let full_sv = a_full.iter().filter(|&&a| a > 1e-9).count();
        assert!(
            r.alpha.len() <= full_sv,
            "seed {seed}: {} SVs vs {full_sv}",
            r.alpha.len()
        );
        assert!(r.certified_gap.unwrap() <= 1e-8, "seed {seed}");
    }
}

/// CVM with the MEB stopping rule reaches its relative tolerance, and `--stop meb` refuses
/// kernels without a constant k(x, x).
#[test]
fn cvm_meb_rule() {
    let ds = random_dataset(500, 4, false, 7);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.7 }, 5.0).unwrap();
    let eps = 1e-6;
    let params = SolverParams {
        algorithm: Some(Algorithm::Cvm),
        eps,
        stop: StopRule::Meb,
        ..Default::default()
    };
    let mut be = f64_backend(&prob);
    let r = solve(&prob, be.as_mut(), &params, &mut []).unwrap();
    assert_eq!(r.stop, StopReason::Converged);
    let (f, gap) = (r.certified_f.unwrap(), r.certified_gap.unwrap());
    let kappa = prob.q_diag(0);
    let r2 = kappa - 2.0 * f;
    assert!(
        2.0 * gap <= ((1.0 + eps).powi(2) - 1.0) * r2 * (1.0 + 1e-9),
        "gap {gap} vs R² {r2}"
    );
    let lin = Problem::new(&ds, ds.labels.clone(), Kernel::Linear, 5.0).unwrap();
    let mut be = f64_backend(&lin);
    let e = solve(&lin, be.as_mut(), &params, &mut []).unwrap_err();
    assert!(e.to_string().contains("normalized kernel"), "{e}");
}

/// C-SVM dual objective ½αᵀHα − 1ᵀα and the KKT violation, evaluated from scratch.
fn csvm_dual(prob: &Problem<'_>, alpha: &ActiveSet) -> f64 {
    let mut q = 0.0;
    for (i, a) in alpha.iter() {
        for (j, b) in alpha.iter() {
            q += a * b * prob.y[i] * prob.y[j] * prob.k(i, j);
        }
    }
    0.5 * q - alpha.iter().map(|(_, a)| a).sum::<f64>()
}

/// A projected-gradient reference for the C-SVM dual (box and yᵀα = 0 by alternating
/// projections is fiddly; instead: SMO with maximal violating pairs to 1e-10, written here
/// independently of the library's solvers).
fn smo_reference(prob: &Problem<'_>, c: f64) -> f64 {
    let m = prob.len();
    let k: Vec<Vec<f64>> = (0..m)
        .map(|i| (0..m).map(|j| prob.k(i, j)).collect())
        .collect();
    let y = &prob.y;
    let mut a = vec![0.0; m];
    let mut grad = vec![-1.0; m]; // ∇ = Hα − 1
    for _ in 0..1_000_000 {
        // I_up: y=+1,a<C or y=-1,a>0 ; I_low: y=+1,a>0 or y=-1,a<C ; maximize -y∇
        let (mut i, mut gi) = (usize::MAX, f64::NEG_INFINITY);
        let (mut j, mut gj) = (usize::MAX, f64::INFINITY);
        for t in 0..m {
            let v = -y[t] * grad[t];
            let up = (y[t] > 0.0 && a[t] < c) || (y[t] < 0.0 && a[t] > 0.0);
            let low = (y[t] > 0.0 && a[t] > 0.0) || (y[t] < 0.0 && a[t] < c);
            if up && v > gi {
                gi = v;
                i = t;
            }
            if low && v < gj {
                gj = v;
                j = t;
            }
        }
        if gi - gj < 1e-10 {
            break;
        }
        // move along y_i e_i − y_j e_j
        let curv = (k[i][i] + k[j][j] - 2.0 * k[i][j]).max(1e-12);
        let mut t = (gi - gj) / curv;
        let ti = if y[i] > 0.0 { c - a[i] } else { a[i] };
        let tj = if y[j] > 0.0 { a[j] } else { c - a[j] };
        t = t.min(ti).min(tj);
        a[i] += y[i] * t;
        a[j] -= y[j] * t;
        for s in 0..m {
            grad[s] += y[s] * (k[s][i] - k[s][j]) * t;
        }
    }
    let mut al = ActiveSet::new(m);
    for (t, &v) in a.iter().enumerate() {
        al.set(t, v);
    }
    csvm_dual(prob, &al)
}

/// What one observer saw of a solve.
#[derive(Default)]
struct Seen {
    iterations: Vec<u64>,
    steps: Vec<Option<StepKind>>,
    finished: Vec<(u64, Option<f64>, StopReason)>,
}

impl Observer for Seen {
    fn observe(&mut self, p: &Progress) {
        self.iterations.push(p.iter);
        self.steps.push(p.step.map(|s| s.kind));
    }
    fn finish(&mut self, r: &SolveResult) {
        self.finished.push((r.iterations, r.certified_gap, r.stop));
    }
}

/// One loop drives every algorithm, SimpleSVM included: observers see iterations 0, 1, …, n
/// (the first with no step, SimpleSVM's after with its violator steps), then the outcome once
/// with the certified figures; the iteration cap stops each of them the same way.
#[test]
fn one_loop_drives_every_algorithm() {
    let ds = random_dataset(150, 3, false, 8);
    for alg in Algorithm::ALL {
        let prob = alg
            .problem(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 2.0)
            .unwrap();
        for max_iter in [5, 10_000_000] {
            let params = SolverParams {
                algorithm: Some(alg),
                max_iter,
                ..Default::default()
            };
            let mut seen = Seen::default();
            let r = solve(
                &prob,
                f64_backend(&prob).as_mut(),
                &params,
                &mut [&mut seen],
            )
            .unwrap();
            let expected: Vec<u64> = (0..=r.iterations).collect();
            assert_eq!(seen.iterations, expected, "{alg}");
            assert_eq!(
                seen.finished,
                vec![(r.iterations, r.certified_gap, r.stop)],
                "{alg}"
            );
            assert!(r.certified_gap.is_some(), "{alg}");
            assert_eq!(seen.steps[0], None, "{alg}");
            let violator_steps = seen.steps[1..]
                .iter()
                .all(|k| *k == Some(StepKind::Violator));
            assert_eq!(violator_steps, alg == Algorithm::SimpleSvm, "{alg}");
            if max_iter == 5 {
                assert_eq!((r.stop, r.iterations), (StopReason::MaxIter, 5), "{alg}");
            } else {
                assert_eq!(r.stop, StopReason::Converged, "{alg}");
            }
            assert_eq!(r.rho.is_some(), alg == Algorithm::SimpleSvm, "{alg}");
        }
    }
}

/// The working-set rounds run the one loop several times: observers see the iterations
/// counted across rounds and the run's outcome once.
#[test]
fn working_set_rounds_report_once() {
    use fwsvm::solver::entry::solve_rounds as shrink_solve;
    use fwsvm::solver::shrink::ShrinkParams;
    let ds = random_dataset(400, 3, false, 12);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 2.0 }, 10.0).unwrap();
    let sp = ShrinkParams {
        min_points: 0,
        min_size: 20,
        ..Default::default()
    };
    let mut seen = Seen::default();
    let cpu = CpuConfig {
        cache_bytes: 8 << 20,
        precision: Some(Precision::F64),
        batched: false,
    };
    let params = SolverParams {
        algorithm: Some(fwsvm::solver::Algorithm::Partan),
        ..Default::default()
    };
    let r = shrink_solve(
        &prob,
        &fwsvm::backend::Device::Cpu,
        cpu,
        &params,
        &sp,
        &mut [&mut seen],
    )
    .unwrap();
    // Several rounds here (3 when written), so `finish` once means the rounds' own stayed in.
    assert!(r.shrink.unwrap().rounds > 1);
    assert_eq!(seen.finished, vec![(r.iterations, r.certified_gap, r.stop)]);
    assert!(seen.iterations.windows(2).all(|w| w[0] <= w[1]));
}

/// SimpleSVM needs its C-SVM problem, and the simplex entry point refuses it.
#[test]
fn simplesvm_needs_its_problem() {
    let ds = random_dataset(60, 2, false, 9);
    let l2 = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 2.0).unwrap();
    let params = SolverParams {
        algorithm: Some(Algorithm::SimpleSvm),
        ..Default::default()
    };
    let e = solve(&l2, f64_backend(&l2).as_mut(), &params, &mut []).unwrap_err();
    assert!(e.to_string().contains("c_svm"), "{e}");
    let csvm = Problem::c_svm(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 2.0).unwrap();
    let e = solve_from(
        &csvm,
        f64_backend(&csvm).as_mut(),
        &params,
        &mut [],
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("simplex"), "{e}");
    for c in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = Problem::c_svm(&ds, ds.labels.clone(), Kernel::Linear, c).unwrap_err();
        assert!(e.to_string().contains("C must be a positive number"), "{e}");
    }
}

/// SimpleSVM reaches the C-SVM optimum (an SMO written here to 1e-10) with every violator
/// rule and linear solver, keeps yᵀα = 0 and 0 ≤ α ≤ C.
#[test]
fn simplesvm_reaches_the_csvm_optimum() {
    for (seed, c, kernel) in [
        (21u64, 1.0, Kernel::Rbf { gamma: 1.0 }),
        (22, 10.0, Kernel::Rbf { gamma: 0.3 }),
        (
            23,
            0.5,
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
        ),
    ] {
        let ds = random_dataset(250, 3, false, seed);
        let prob = Problem::c_svm(&ds, ds.labels.clone(), kernel, c).unwrap();
        let reference = smo_reference(&prob, c);
        for violator in [Violator::Greedy, Violator::Queue] {
            for solver in [LinearSolver::Cholesky, LinearSolver::Cg] {
                let tag = format!("seed {seed}, {violator:?}, {solver:?}");
                let mut be = f64_backend(&prob);
                let params = SolverParams {
                    algorithm: Some(Algorithm::SimpleSvm),
                    eps: 1e-8,
                    seed,
                    simple: SimpleParams { violator, solver },
                    ..Default::default()
                };
                let r = solve(&prob, be.as_mut(), &params, &mut []).unwrap();
                assert_eq!(r.stop, StopReason::Converged, "{tag}");
                let dual = csvm_dual(&prob, &r.alpha);
                assert!(
                    (dual - reference).abs() <= 1e-7 * reference.abs(),
                    "{tag}: {dual} vs {reference}"
                );
                assert!(
                    (r.certified_f.unwrap() - dual).abs() <= 1e-9 * dual.abs(),
                    "{tag}"
                );
                assert!(
                    r.certified_gap.unwrap() <= 1e-6,
                    "{tag}: {:?}",
                    r.certified_gap
                );
                let ya: f64 = r.alpha.iter().map(|(i, a)| a * prob.y[i]).sum();
                assert!(
                    ya.abs() <= 1e-9 * c * prob.len() as f64,
                    "{tag}: yᵀα = {ya}"
                );
                assert!(
                    r.alpha
                        .iter()
                        .all(|(_, a)| a > 0.0 && a <= c * (1.0 + 1e-12))
                );
            }
        }
    }
}

/// A shared dataset, optionally without its first feature (breast-cancer's sample id).
fn shared(name: &str, drop_first: bool) -> Option<Dataset> {
    let path = common::dataset(name)?;
    let ds = read_dataset(&path, &ReadOptions::default()).unwrap();
    Some(if drop_first {
        common::drop_first_feature(&ds)
    } else {
        ds
    })
}

/// Seeded 70/30 split.
fn split(ds: &Dataset, seed: u64) -> (Dataset, Dataset) {
    let mut idx: Vec<usize> = (0..ds.len()).collect();
    let mut rng = fwsvm::rng::SplitMix64::new(seed);
    for k in (1..idx.len()).rev() {
        let r = rng.below(k + 1);
        idx.swap(k, r);
    }
    let n = ds.len() * 7 / 10;
    (ds.subset(&idx[..n]), ds.subset(&idx[n..]))
}

/// (SVs, test accuracy %) of one training run.
fn run(train_ds: &Dataset, test: &Dataset, alg: Algorithm, c: f64) -> (usize, f64) {
    let params = TrainParams {
        c,
        gamma: Gamma::Auto,
        solver: SolverParams {
            algorithm: Some(alg),
            ..Default::default()
        },
        // Both methods over every point, as the paper compares them (and docs/GUIDE.md reports).
        shrink: None,
        ..Default::default()
    };
    let (model, _) = train(train_ds, &params, &mut |_| Vec::new()).unwrap();
    let pred = model.predict(test);
    let ok = pred
        .iter()
        .zip(&test.labels)
        .filter(|(a, b)| a == b)
        .count();
    (model.total_sv(), 100.0 * ok as f64 / test.len() as f64)
}

/// The claims of Alaíz et al. (2017) on heart_scale, breast-cancer (without the sample id) and
/// a9a (6,000 rows): across C ∈ {0.1, 1, 10, 100} sparse FW keeps fewer support vectors than
/// PARTAN on average, at a mean accuracy within a point, and its SV count varies less with C.
#[test]
fn sparse_fw_keeps_fewer_support_vectors_on_real_data() {
    let sets = [
        ("heart_scale.xz", false, None),
        ("breast-cancer.xz", true, None),
        ("a9a.xz", false, Some(6000usize)),
    ];
    for (name, drop_first, cap) in sets {
        let Some(mut ds) = shared(name, drop_first) else {
            continue;
        };
        if let Some(n) = cap {
            ds = ds.subset(&(0..n.min(ds.len())).collect::<Vec<_>>());
        }
        let (tr, te) = split(&ds, 1);
        let cs = [0.1, 1.0, 10.0, 100.0];
        let mut rows = Vec::new();
        for alg in [Algorithm::Partan, Algorithm::SparseFw] {
            let r: Vec<(usize, f64)> = cs.iter().map(|&c| run(&tr, &te, alg, c)).collect();
            eprintln!("{name} {alg}: {r:?}");
            rows.push(r);
        }
        let mean = |r: &[(usize, f64)], f: &dyn Fn(&(usize, f64)) -> f64| {
            r.iter().map(f).sum::<f64>() / r.len() as f64
        };
        let range = |r: &[(usize, f64)]| {
            let a: Vec<f64> = r.iter().map(|x| x.1).collect();
            a.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - a.iter().cloned().fold(f64::INFINITY, f64::min)
        };
        let (p, s) = (&rows[0], &rows[1]);
        let (sv_p, sv_s) = (mean(p, &|x| x.0 as f64), mean(s, &|x| x.0 as f64));
        let (acc_p, acc_s) = (mean(p, &|x| x.1), mean(s, &|x| x.1));
        assert!(
            sv_s <= 0.9 * sv_p,
            "{name}: sparse-fw {sv_s:.0} SVs on average vs partan {sv_p:.0}"
        );
        assert!(
            acc_s >= acc_p - 1.0,
            "{name}: sparse-fw accuracy {acc_s:.2} vs partan {acc_p:.2}"
        );
        // Sensitivity to C, measured as the spread over the grid: the SV count's spread is
        // asserted; the accuracy's is reported (docs/GUIDE.md), since on these sets the accuracy of
        // both falls at large C alike.
        let sv_range = |r: &[(usize, f64)]| {
            let a: Vec<usize> = r.iter().map(|x| x.0).collect();
            a.iter().max().unwrap() - a.iter().min().unwrap()
        };
        eprintln!(
            "{name}: accuracy spread over C: partan {:.2}, sparse-fw {:.2}; SV spread: partan {}, sparse-fw {}",
            range(p),
            range(s),
            sv_range(p),
            sv_range(s)
        );
        assert!(
            sv_range(s) < sv_range(p),
            "{name}: sparse-fw's SV count varies more with C ({}) than partan's ({})",
            sv_range(s),
            sv_range(p)
        );
    }
}

/// One-class training is the minimum enclosing ball of the points in the feature space of
/// k + δ/C (`train::train_one_class`): at a tight gap, every training point outside the ball
/// (decision < 0) is a support vector and every point with α_i = 0 lies inside (decision ≥ 0
/// up to the gap), rho = αᵀ(K + I/C)α, and the result does not depend on the labels.
#[test]
fn one_class_is_the_enclosing_ball() {
    let ds = random_dataset(300, 4, false, 12);
    let params = TrainParams {
        c: 5.0,
        gamma: Gamma::Value(0.8),
        one_class: true,
        solver: SolverParams {
            algorithm: Some(Algorithm::Swap2),
            eps: 1e-10,
            rel_eps: Some(f64::INFINITY),
            max_iter: 1_000_000,
            ..Default::default()
        },
        ..Default::default()
    };
    let (model, reports) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
    assert!(model.one_class && model.sv_coef.len() == 1 && model.rho.len() == 1);
    let r = &reports[0].result;
    assert_eq!(r.stop, fwsvm::solver::StopReason::Converged);
    // rho from the definition: αᵀK̃α over the support vectors.
    let kernel = model.kernel;
    let alpha: Vec<(usize, f64)> = r.alpha.iter().collect();
    let mut quad = 0.0;
    for &(i, a) in &alpha {
        for &(j, b) in &alpha {
            let k = kernel.eval(&ds.row(i), &ds.row(j));
            quad += a * b * (k + if i == j { 1.0 / params.c } else { 0.0 });
        }
    }
    assert!(
        (model.rho[0] - quad).abs() < 1e-9,
        "rho {} vs {quad}",
        model.rho[0]
    );
    let (pred, dec) = model.predict_with_decisions(&ds);
    let mut outside = 0;
    for i in 0..ds.len() {
        let a = r.alpha.get(i);
        if dec[i][0] < -1e-8 {
            assert!(
                a > 0.0,
                "row {i} lies outside without being a support vector"
            );
        }
        if a == 0.0 {
            assert!(dec[i][0] >= -1e-8, "row {i} (α = 0) outside: {}", dec[i][0]);
        }
        outside += usize::from(pred[i] < 0.0);
    }
    assert!(outside > 0 && outside < ds.len());
    // The labels play no part.
    let mut flipped = ds.clone();
    flipped.labels.iter_mut().for_each(|y| *y = -*y);
    let (again, _) = train(&flipped, &params, &mut |_| Vec::new()).unwrap();
    assert_eq!(again.sv_coef, model.sv_coef);
    assert_eq!(again.rho, model.rho);
}
