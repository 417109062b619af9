//! Row-partitioned training on P ranks (threads of this process, `ThreadComm`) against one
//! process: with f64 columns the same iterates to the bit — every objective and gap along the
//! way, the iteration count, the final α and the certified figures — for every FW variant, the
//! CVM and sparse FW, on dense and sparse data, with one rank that owns no support vector and one whose
//! slice is empty.

mod common;

use common::problems::random_dataset;
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::backend::{Marks, Solvable};
use fwsvm::data::Dataset;
use fwsvm::dist::backend::DistBackend;
use fwsvm::dist::comm::{Comm, on_threads};
use fwsvm::dist::slice::{RowSlice, share};
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::{Algorithm, Progress, SolveResult, SolverParams, solve, solve_plain};

const F64: CpuConfig = CpuConfig {
    cache_bytes: 8 << 20,
    precision: Some(Precision::F64),
    batched: false,
};

/// (iteration, f, gap) of every iteration, and the result.
type Run = (Vec<(u64, f64, f64)>, SolveResult);

fn run_one(prob: &Problem<'_>, be: &mut dyn Marks, params: &SolverParams) -> Run {
    let mut seen = Vec::new();
    let mut obs = |p: &Progress| seen.push((p.iter, p.f, p.gap));
    let r = solve(prob, be, params, &mut [&mut obs]).unwrap();
    (seen, r)
}

/// [`run_one`] on a backend without marked reductions (the sampled one).
fn run_plain(prob: &Problem<'_>, be: &mut dyn Solvable, params: &SolverParams) -> Run {
    let mut seen = Vec::new();
    let mut obs = |p: &Progress| seen.push((p.iter, p.f, p.gap));
    let r = solve_plain(prob, be, params, &mut [&mut obs]).unwrap();
    (seen, r)
}

/// Rank `c`'s slice of `ds` (`rows` per rank, or the even share).
fn slice_of(ds: &Dataset, c: &dyn Comm, sizes: Option<&[usize]>) -> (Dataset, RowSlice) {
    let m = ds.len();
    let (a, b) = match sizes {
        Some(s) => {
            let a: usize = s[..c.rank()].iter().sum();
            (a, a + s[c.rank()])
        }
        None => {
            let (a, b) = share(m as u64, c.rank(), c.size());
            (a as usize, b as usize)
        }
    };
    let rows: Vec<usize> = (a..b).collect();
    (
        ds.subset(&rows),
        RowSlice {
            first: a,
            rows: b - a,
            total: m,
        },
    )
}

fn run_ranks(
    ds: &Dataset,
    kernel: Kernel,
    c: f64,
    params: &SolverParams,
    ranks: usize,
    sizes: Option<&[usize]>,
) -> Vec<Run> {
    on_threads(ranks, |comm| {
        let (local, slice) = slice_of(ds, comm, sizes);
        let prob = Problem::new(&local, local.labels.clone(), kernel, c).unwrap();
        let be = cpu_backend(&prob, F64);
        let mut dist = DistBackend::new(comm, &prob, be, slice).unwrap();
        run_one(&prob, &mut dist, params)
    })
}

/// `model` saved is the file `expected` (one process's model file), byte for byte.
fn same_file(dir: &std::path::Path, model: &fwsvm::model::Model, expected: &[u8], what: &str) {
    let p = dir.join("rank.model");
    model.save(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), expected, "{what}");
}

fn same(tag: &str, one: &Run, many: &Run) {
    assert_eq!(one.0.len(), many.0.len(), "{tag}: iterations seen");
    for (a, b) in one.0.iter().zip(&many.0) {
        assert_eq!(a, b, "{tag}: (iteration, f, gap)");
    }
    let (r1, rp) = (&one.1, &many.1);
    assert_eq!(r1.iterations, rp.iterations, "{tag}");
    assert_eq!(r1.stop, rp.stop, "{tag}");
    assert_eq!(r1.alpha.indices(), rp.alpha.indices(), "{tag}: support");
    assert_eq!(r1.alpha.weights(), rp.alpha.weights(), "{tag}: α");
    assert_eq!(r1.certified_f, rp.certified_f, "{tag}: certified f");
    assert_eq!(r1.certified_gap, rp.certified_gap, "{tag}: certified gap");
}

#[test]
fn every_variant_takes_the_single_process_steps_on_p_ranks() {
    for (name, sparse, kernel, c) in [
        ("dense rbf", false, Kernel::Rbf { gamma: 0.7 }, 3.0),
        ("sparse rbf", true, Kernel::Rbf { gamma: 0.7 }, 3.0),
        (
            "sparse poly",
            true,
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
            1.0,
        ),
    ] {
        let ds = random_dataset(240, 5, sparse, 17);
        let full = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        for alg in
            Algorithm::FW
                .into_iter()
                .chain([Algorithm::Ws, Algorithm::Cvm, Algorithm::SparseFw])
        {
            // Plain FW needs many iterations for a tight gap; the cap keeps each run short (the
            // iterates are compared at every step whatever stops the run).
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-5,
                max_iter: 2000,
                ..Default::default()
            };
            let one = run_one(&full, cpu_backend(&full, F64).as_mut(), &params);
            for ranks in [2, 3] {
                let runs = run_ranks(&ds, kernel, c, &params, ranks, None);
                for (r, many) in runs.iter().enumerate() {
                    same(&format!("{name}, {alg}, rank {r} of {ranks}"), &one, many);
                }
            }
        }
    }
}

#[test]
fn empty_slices_and_ranks_without_support_vectors() {
    let ds = random_dataset(180, 4, false, 23);
    let kernel = Kernel::Rbf { gamma: 1.0 };
    let full = Problem::new(&ds, ds.labels.clone(), kernel, 2.0).unwrap();
    for alg in [Algorithm::Partan, Algorithm::SparseFw] {
        let params = SolverParams {
            algorithm: Some(alg),
            eps: 1e-5,
            max_iter: 2000,
            ..Default::default()
        };
        let one = run_one(&full, cpu_backend(&full, F64).as_mut(), &params);
        // Rank 1 owns nothing; rank 2 owns three rows that hold no support vector.
        let sv = one.1.alpha.indices();
        let a = (1..ds.len() - 3)
            .find(|&a| !sv.iter().any(|&i| (a..a + 3).contains(&i)))
            .expect("three rows in a row without a support vector");
        let sizes = [a, 0, 3, ds.len() - a - 3];
        let runs = run_ranks(&ds, kernel, 2.0, &params, 4, Some(&sizes));
        for (r, many) in runs.iter().enumerate() {
            same(
                &format!("{alg}, rank {r} of 4 (sizes {sizes:?})"),
                &one,
                many,
            );
        }
    }
}

/// Sampled iterations over ranks: the same draws on every rank, each block's rows computed by
/// their owners — every variant and the CVM take the single-process steps, to the bit, on
/// dense and sparse data, with an empty slice (both block methods: |S|·|A| below and above
/// the panel's threshold).
#[test]
fn sampled_iterations_take_the_single_process_steps_on_p_ranks() {
    use fwsvm::backend::sampled::{Sampled, SampledConfig};
    use fwsvm::dist::blocks::DistBlocks;
    for (name, sparse, kernel) in [
        ("dense rbf", false, Kernel::Rbf { gamma: 0.7 }),
        ("sparse rbf", true, Kernel::Rbf { gamma: 0.3 }),
    ] {
        let ds = random_dataset(400, 6, sparse, 41);
        let full = Problem::new(&ds, ds.labels.clone(), kernel, 5.0).unwrap();
        for alg in Algorithm::FW.into_iter().chain([Algorithm::Cvm]) {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-4,
                max_iter: 600,
                ..Default::default()
            };
            let cfg = SampledConfig {
                sample: 90,
                seed: 5,
                eps: params.eps,
                rel_eps: params.rel_eps(),
                extra_draws: 2,
                stop: params.stop,
            };
            let one = run_plain(&full, &mut Sampled::new(&full, cfg), &params);
            assert!(
                one.1.alpha.len() * 90 >= 4096,
                "{name}, {alg}: the panel is used"
            );
            for (ranks, sizes) in [(2, None), (3, Some(&[150usize, 0, 250][..]))] {
                let runs = on_threads(ranks, |comm| {
                    let (local, slice) = slice_of(&ds, comm, sizes);
                    let prob = Problem::new(&local, local.labels.clone(), kernel, 5.0).unwrap();
                    let blocks = DistBlocks::new(comm, &prob, slice).unwrap();
                    let mut be = Sampled::with_engine(cfg, Box::new(blocks));
                    run_plain(&prob, &mut be, &params)
                });
                for (r, many) in runs.iter().enumerate() {
                    same(
                        &format!("{name}, {alg}, sampled, rank {r} of {ranks}"),
                        &one,
                        many,
                    );
                }
            }
        }
    }
}

/// The model of a binary training on P ranks (γ auto, both classes weighted; full gradients
/// and sampled iterations) is the file one process writes, byte for byte (f64 columns).
#[test]
fn the_distributed_model_is_the_single_process_model() {
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    for (sparse, alg, sample) in [
        (false, Algorithm::Ws, 0),
        (true, Algorithm::Ws, 0),
        (false, Algorithm::Partan, 0),
        (true, Algorithm::Swap, 0),
        (false, Algorithm::Mfw, 60),
    ] {
        let mut ds = random_dataset(200, 6, sparse, 31);
        // Labels 3 and 7 rather than ±1: the class order and the model's labels carry over.
        ds.labels
            .iter_mut()
            .for_each(|l| *l = if *l > 0.0 { 7.0 } else { 3.0 });
        let params = TrainParams {
            c: 4.0,
            class_weights: vec![(3.0, 1.5)],
            cpu: F64,
            sample,
            solver: SolverParams {
                algorithm: Some(alg),
                eps: 1e-5,
                ..Default::default()
            },
            ..Default::default()
        };
        let (one, _) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        let one_path = dir.path().join("one.model");
        one.save(&one_path).unwrap();
        let expected = std::fs::read(&one_path).unwrap();
        for ranks in [2, 3] {
            let models = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, None);
                fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut [])
                    .unwrap()
                    .0
            });
            for (r, m) in models.iter().enumerate() {
                same_file(
                    dir.path(),
                    m,
                    &expected,
                    &format!("{alg}, sparse {sparse}, |S| {sample}, rank {r} of {ranks}"),
                );
            }
        }
    }
}

/// The working-set solver by rounds over ranks (a problem of more than
/// [`fwsvm::solver::rounds::WS_MIN_POINTS`] points, which one process solves by rounds after
/// a warm start): the ranks warm-start as one process does (the same subsample, solved to the
/// same support), and every rank ends with the same α, converged, at the optimum of one
/// process within the certified gaps — by rounds, and without them (`--no-shrink`) (the extension's margins are screened in f32 over other
/// row sets, so the iterates that follow are not one process's to the bit).
#[test]
fn ws_by_rounds_over_ranks_reaches_the_single_process_optimum() {
    let ds = random_dataset(fwsvm::solver::rounds::WS_MIN_POINTS + 2000, 3, false, 9);
    // By rounds (the default), and without them (`--no-shrink`: warm-started all the same).
    for shrink in [Some(Default::default()), None] {
        ws_over_ranks_reaches_the_single_process_optimum(&ds, shrink);
    }
}

fn ws_over_ranks_reaches_the_single_process_optimum(
    ds: &Dataset,
    shrink: Option<fwsvm::solver::shrink::ShrinkParams>,
) {
    use fwsvm::train::{TrainParams, train};
    let params = TrainParams {
        c: 2.0,
        shrink,
        ..Default::default()
    };
    let (_, one) = train(ds, &params, &mut |_| Vec::new()).unwrap();
    let one = &one[0].result;
    let (f1, gap1) = (one.certified_f.unwrap(), one.certified_gap.unwrap());
    let runs = on_threads(2, |comm| {
        let (local, slice) = slice_of(ds, comm, None);
        let (_, r) =
            fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut []).unwrap();
        r.into_iter().next().unwrap()
    });
    let w1 = one.warm.expect("one process warm-starts");
    for r in &runs {
        assert_eq!(r.stop, fwsvm::solver::StopReason::Converged);
        let w = r.warm.expect("the ranks warm-start");
        assert_eq!(
            (
                w.points,
                w.ratio,
                w.sub_support,
                w.half_support,
                w.iterations
            ),
            (
                w1.points,
                w1.ratio,
                w1.sub_support,
                w1.half_support,
                w1.iterations
            ),
            "the subsample's solve"
        );
        assert_eq!(w.sub_f.to_bits(), w1.sub_f.to_bits(), "the subsample's f");
        assert!(
            w.support.abs_diff(w1.support) * 100 <= w1.support,
            "support {} against {}",
            w.support,
            w1.support
        );
        assert_eq!(r.alpha.indices(), runs[0].alpha.indices(), "every rank's α");
        assert_eq!(r.alpha.weights(), runs[0].alpha.weights(), "every rank's α");
        let (f, gap) = (r.certified_f.unwrap(), r.certified_gap.unwrap());
        // f − f* ≤ gap for each: their difference is within the larger gap.
        assert!(
            (f - f1).abs() <= gap.max(gap1),
            "f {f} against {f1}, gaps {gap}, {gap1}"
        );
    }
}

/// Repeated points merged over the ranks before a warm-started run by rounds: the ranks solve
/// the same subsample of the merged points to the same support as one process.
#[test]
fn merged_points_warm_start_over_ranks_as_in_one_process() {
    use fwsvm::train::{TrainParams, train};
    let base = random_dataset(fwsvm::solver::rounds::WS_MIN_POINTS + 2000, 3, false, 13);
    // Every fourth point twice more, the copies spread over the rows.
    let mut rows: Vec<usize> = (0..base.len()).collect();
    rows.extend((0..base.len()).step_by(4));
    rows.extend((0..base.len()).step_by(4));
    let mut rng = fwsvm::rng::SplitMix64::new(5);
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.below(i + 1));
    }
    let ds = base.subset(&rows);
    let params = TrainParams {
        c: 2.0,
        cpu: F64,
        ..Default::default()
    };
    let (_, one) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
    let w1 = one[0].result.warm.expect("one process warm-starts");
    let runs = on_threads(2, |comm| {
        let (local, slice) = slice_of(&ds, comm, None);
        let (_, r) =
            fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut []).unwrap();
        r.into_iter().next().unwrap()
    });
    for r in &runs {
        let w = r.warm.expect("the ranks warm-start");
        assert_eq!(
            (w.points, w.sub_support, w.half_support, w.iterations),
            (w1.points, w1.sub_support, w1.half_support, w1.iterations),
            "the subsample's solve"
        );
        assert_eq!(w.sub_f.to_bits(), w1.sub_f.to_bits(), "the subsample's f");
    }
}

/// Rows whose layout on the CPU a rank alone would choose otherwise than the whole set: six
/// features 0/1-valued on the first half of the rows (bit sets there) but not on the second
/// (the whole set dense), with repeated rows (grouped) and without. Each rank lays out its
/// rows as one process lays out all of them, so the model file is one process's, for ws and
/// PARTAN.
#[test]
fn ranks_lay_out_their_rows_as_the_whole_set() {
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    let (m, d) = (3000, 12);
    let mut r = fwsvm::rng::SplitMix64::new(23);
    let (mut ip, mut ix, mut vs, mut y) = (vec![0usize], Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        let label = if r.next_f64() < 0.4 { 1.0 } else { -1.0 };
        for f in 0..d {
            let v = if f < 6 {
                r.next_f64() * 2.0 - 1.0 + if f == 0 { 0.6 * label } else { 0.0 }
            } else if i < m / 2 || r.next_f64() < 0.8 {
                f64::from(u8::from(r.next_f64() < 0.3))
            } else {
                0.5
            };
            ix.push(f as u32);
            vs.push(v as f32);
        }
        ip.push(ix.len());
        y.push(label);
    }
    let base = Dataset::from_csr(d, ip, ix, vs, y);
    // The same rows, and with every row twice (interleaved: the copies on the same rank).
    let twice: Vec<usize> = (0..m).flat_map(|i| [i, i]).collect();
    for (what, ds) in [("plain", base.clone()), ("repeated", base.subset(&twice))] {
        for alg in [Algorithm::Ws, Algorithm::Partan] {
            let params = TrainParams {
                c: 4.0,
                cpu: F64,
                solver: SolverParams {
                    algorithm: Some(alg),
                    ..Default::default()
                },
                ..Default::default()
            };
            let (one, _) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
            let one_path = dir.path().join("one.model");
            one.save(&one_path).unwrap();
            let expected = std::fs::read(&one_path).unwrap();
            let models = on_threads(2, |comm| {
                let (local, slice) = slice_of(&ds, comm, None);
                fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut [])
                    .unwrap()
                    .0
            });
            same_file(dir.path(), &models[0], &expected, &format!("{what}, {alg}"));
        }
    }
}

/// One-versus-one over ranks: each class pair trained over all ranks on its rows, or the pairs
/// dealt to ranks whole; the model file equals one process's (three classes, one of them
/// weighted), with PARTAN and with the working-set solver.
#[test]
fn one_versus_one_over_ranks_is_the_single_process_model() {
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    let mut ds = random_dataset(210, 4, false, 41);
    // Three classes by the first feature's third, interleaved along the rows.
    for i in 0..ds.len() {
        let mut x = vec![0.0; ds.n_features()];
        ds.row(i).scatter_f64(&mut x);
        ds.labels[i] = if x[0] < -0.3 {
            2.0
        } else if x[0] < 0.3 {
            5.0
        } else {
            9.0
        };
    }
    for alg in [Algorithm::Partan, Algorithm::Ws] {
        let params = TrainParams {
            c: 2.0,
            class_weights: vec![(5.0, 2.0)],
            cpu: F64,
            solver: SolverParams {
                algorithm: Some(alg),
                eps: 1e-5,
                ..Default::default()
            },
            ..Default::default()
        };
        let (one, reports) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        assert_eq!(reports.len(), 3, "three class pairs");
        let one_path = dir.path().join("one.model");
        one.save(&one_path).unwrap();
        let expected = std::fs::read(&one_path).unwrap();
        for ranks in [2, 3] {
            let models = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, None);
                fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut [])
                    .unwrap()
                    .0
            });
            for (r, m) in models.iter().enumerate() {
                same_file(
                    dir.path(),
                    m,
                    &expected,
                    &format!("{alg}, rank {r} of {ranks}"),
                );
            }
        }
        // The pairs dealt to ranks whole (every rank holding all rows): the same file, and each
        // pair's report (iterations, certified gap, α) as one process's.
        for ranks in [2, 4] {
            let got = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, None);
                let all = fwsvm::dist::plan::gather_dataset(comm, &local, &slice).unwrap();
                fwsvm::dist::train::train_pairs_dealt(comm, &all, &params).unwrap()
            });
            for (r, (m, reps)) in got.iter().enumerate() {
                same_file(
                    dir.path(),
                    m,
                    &expected,
                    &format!("{alg}, dealt, rank {r} of {ranks}"),
                );
                for (a, b) in reports.iter().zip(reps) {
                    assert_eq!(a.classes, b.classes);
                    assert_eq!(a.result.iterations, b.result.iterations);
                    assert_eq!(a.result.certified_gap, b.result.certified_gap);
                    assert_eq!(a.result.stop, b.result.stop);
                    assert_eq!(a.result.alpha.indices(), b.result.alpha.indices());
                    assert_eq!(a.result.alpha.weights(), b.result.alpha.weights());
                }
            }
        }
    }
}

/// Cross-validation over ranks: the same folds, the same held-out counts and the same number
/// of right predictions per fold as one process (γ auto, f64 columns).
#[test]
fn cross_validation_over_ranks_is_the_single_process_one() {
    use fwsvm::train::{TrainParams, cross_validate};
    let ds = random_dataset(180, 4, false, 53);
    let params = TrainParams {
        c: 3.0,
        cpu: F64,
        solver: SolverParams {
            algorithm: Some(Algorithm::Swap),
            eps: 1e-5,
            ..Default::default()
        },
        ..Default::default()
    };
    let one = cross_validate(&ds, &params, 5, 7, &mut |_, _| Vec::new()).unwrap();
    let expected: Vec<(usize, usize)> = one.folds.iter().map(|(n, c, _)| (*n, *c)).collect();
    for ranks in [2, 3] {
        let got = on_threads(ranks, |comm| {
            let (local, slice) = slice_of(&ds, comm, None);
            fwsvm::dist::train::cross_validate(comm, &local, slice, &params, 5, 7).unwrap()
        });
        for (r, folds) in got.iter().enumerate() {
            let f: Vec<(usize, usize)> = folds.iter().map(|(n, c, _)| (*n, *c)).collect();
            assert_eq!(f, expected, "rank {r} of {ranks}");
            for (k, (_, _, rs)) in folds.iter().enumerate() {
                let its: Vec<u64> = rs.iter().map(|x| x.iterations).collect();
                let one_its: Vec<u64> =
                    one.folds[k].2.iter().map(|p| p.result.iterations).collect();
                assert_eq!(its, one_its, "fold {k}, rank {r} of {ranks}");
            }
        }
    }
}

/// Folds dealt to ranks whole: every rank gets all rows back in one process's layout, and
/// each fold's held-out, right and iteration counts are one process's; a fold with one class
/// on any rank fails every rank.
#[test]
fn folds_dealt_to_ranks_are_the_single_process_folds() {
    use fwsvm::dist::plan::gather_dataset;
    use fwsvm::train::{TrainParams, cross_validate};
    let ds = random_dataset(150, 5, true, 61);
    let points: Vec<TrainParams> = [(1.0, Algorithm::Partan), (8.0, Algorithm::Mfw)]
        .iter()
        .map(|&(c, alg)| TrainParams {
            c,
            cpu: F64,
            solver: SolverParams {
                algorithm: Some(alg),
                eps: 1e-5,
                ..Default::default()
            },
            ..Default::default()
        })
        .collect();
    let expected: Vec<Vec<(usize, usize, u64)>> = points
        .iter()
        .map(|p| {
            cross_validate(&ds, p, 4, 9, &mut |_, _| Vec::new())
                .unwrap()
                .folds
                .iter()
                .map(|(n, c, rs)| (*n, *c, rs.iter().map(|r| r.result.iterations).sum()))
                .collect()
        })
        .collect();
    for sizes in [&[100, 50][..], &[100, 0, 50][..]] {
        let ranks = sizes.len();
        let got = on_threads(ranks, |comm| {
            let (local, slice) = slice_of(&ds, comm, Some(sizes));
            let all = gather_dataset(comm, &local, &slice).unwrap();
            assert_eq!(all.is_dense(), ds.is_dense());
            assert_eq!(all.labels, ds.labels);
            for i in 0..ds.len() {
                let (mut a, mut b) = (vec![0.0; 5], vec![0.0; 5]);
                all.row(i).scatter_f64(&mut a);
                ds.row(i).scatter_f64(&mut b);
                assert_eq!(a, b, "row {i}");
            }
            fwsvm::dist::train::cross_validate_tasks(comm, &all, &points, 4, 9).unwrap()
        });
        for (r, g) in got.iter().enumerate() {
            assert_eq!(g, &expected, "rank {r} of {ranks}");
        }
    }
    // One row of class +1: the fold that holds it out trains on one class.
    let mut one_class = ds.clone();
    for (i, l) in one_class.labels.iter_mut().enumerate() {
        *l = if i == 0 { 1.0 } else { -1.0 };
    }
    let errs = on_threads(2, |comm| {
        let (local, slice) = slice_of(&one_class, comm, None);
        let all = gather_dataset(comm, &local, &slice).unwrap();
        fwsvm::dist::train::cross_validate_tasks(comm, &all, &points[..1], 4, 9)
            .err()
            .map(|e| e.to_string())
    });
    for e in &errs {
        assert!(
            e.as_deref().is_some_and(|m| m.contains("single class")),
            "{errs:?}"
        );
    }
}

/// The plan: tasks when the data fit and the tasks keep every rank busy, rows when there are
/// fewer tasks than ranks; --distribute overrides.
#[test]
fn rows_or_tasks() {
    use fwsvm::dist::plan::{Distribute, choose};
    let ds = random_dataset(60, 3, false, 3);
    let got = on_threads(3, |comm| {
        let (local, _) = slice_of(&ds, comm, None);
        [
            choose(comm, &local, 5, "folds", Distribute::Auto).unwrap(),
            choose(comm, &local, 2, "folds", Distribute::Auto).unwrap(),
            choose(comm, &local, 5, "folds", Distribute::Rows).unwrap(),
            choose(comm, &local, 2, "folds", Distribute::Tasks).unwrap(),
        ]
    });
    for c in &got {
        let plans: Vec<Distribute> = c.iter().map(|x| x.plan).collect();
        assert_eq!(
            plans,
            [
                Distribute::Tasks,
                Distribute::Rows,
                Distribute::Rows,
                Distribute::Tasks
            ],
            "{c:?}"
        );
        assert!(
            c[1].why.contains("cannot keep 3 ranks busy"),
            "{}",
            c[1].why
        );
    }
}

/// Working-set shrinking over ranks: the same rounds (shrinks, rebuilds, sizes), iterates and
/// certified result as one process, for FW variants and the CVM, with an empty slice.
#[test]
fn working_set_rounds_over_ranks_are_the_single_process_rounds() {
    use fwsvm::backend::Device;
    use fwsvm::solver::entry::solve_rounds as shrink_solve;
    use fwsvm::solver::shrink::ShrinkParams;
    let ds = random_dataset(700, 4, false, 71);
    let kernel = Kernel::Rbf { gamma: 2.0 };
    let full = Problem::new(&ds, ds.labels.clone(), kernel, 8.0).unwrap();
    // A narrow margin: W shrinks (filled up to min_size with the lowest g) and is rebuilt.
    let sp = ShrinkParams {
        margin: 0.02,
        min_size: 400,
        min_points: 0,
    };
    let mut shrank = 0;
    for alg in [
        Algorithm::Fw,
        Algorithm::Partan,
        Algorithm::Swap,
        Algorithm::Cvm,
    ] {
        let params = SolverParams {
            algorithm: Some(alg),
            eps: 1e-6,
            max_iter: 20_000,
            ..Default::default()
        };
        let run = |f: &mut dyn FnMut(&mut [&mut dyn fwsvm::solver::Observer]) -> SolveResult| {
            let mut seen = Vec::new();
            let mut obs = |p: &Progress| seen.push((p.iter, p.f, p.gap));
            let r = f(&mut [&mut obs]);
            (seen, r)
        };
        let one = run(&mut |o| shrink_solve(&full, &Device::Cpu, F64, &params, &sp, o).unwrap());
        let st = one.1.shrink.expect("rounds");
        shrank += st.shrinks;
        for sizes in [None, Some(&[300usize, 0, 400][..])] {
            let ranks = sizes.map_or(2, |s| s.len());
            let runs = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, sizes);
                let prob = Problem::new(&local, local.labels.clone(), kernel, 8.0).unwrap();
                run(&mut |o| {
                    fwsvm::dist::shrink::solve(
                        comm,
                        &prob,
                        slice,
                        &Device::Cpu,
                        F64,
                        &params,
                        &sp,
                        false,
                        o,
                    )
                    .unwrap()
                })
            });
            for (r, many) in runs.iter().enumerate() {
                let tag = format!("{alg}, shrinking, rank {r} of {ranks}");
                same(&tag, &one, many);
                let ms = many.1.shrink.expect("rounds");
                assert_eq!(
                    (
                        st.rounds,
                        st.shrinks,
                        st.rebuilds,
                        st.smallest,
                        st.last_size
                    ),
                    (
                        ms.rounds,
                        ms.shrinks,
                        ms.rebuilds,
                        ms.smallest,
                        ms.last_size
                    ),
                    "{tag}"
                );
            }
        }
    }
    assert!(shrank > 0, "the working set shrank in some run");
}

/// A run by rounds that asks for no certificate (a warm start's subsample) leaves each rank
/// α's gradient on its own rows: one process's gradient on them, bit for bit, whether the last
/// round held every point (the backend's) or some were set aside (the exact pass's), with an
/// empty slice among the ranks.
#[test]
fn ranks_leave_the_single_process_gradient_without_a_certificate() {
    use fwsvm::backend::Device;
    use fwsvm::solver::entry::solve_rounds as shrink_solve;
    use fwsvm::solver::shrink::ShrinkParams;
    let ds = random_dataset(700, 4, false, 73);
    let kernel = Kernel::Rbf { gamma: 2.0 };
    let full = Problem::new(&ds, ds.labels.clone(), kernel, 8.0).unwrap();
    let params = SolverParams {
        algorithm: Some(Algorithm::Ws),
        eps: 1e-6,
        certify: false,
        ..Default::default()
    };
    let narrow = ShrinkParams {
        margin: 0.02,
        min_size: 400,
        min_points: 0,
    };
    let whole = ShrinkParams {
        min_points: 0,
        ..Default::default()
    };
    let mut ends = Vec::new();
    for sp in [narrow, whole] {
        let one = shrink_solve(&full, &Device::Cpu, F64, &params, &sp, &mut []).unwrap();
        let g1 = one
            .gradient
            .clone()
            .expect("one process leaves its gradient");
        let mut exact = vec![0.0; full.len()];
        fwsvm::backend::exact::full_gradient(&full, &one.alpha, &mut exact);
        // Off the support the exact pass's rows may be its f32 screen's (about 1e-6 of each
        // term off).
        let scale = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in g1.iter().zip(&exact) {
            assert!((a - b).abs() <= 1e-5 * scale, "{a} against {b}");
        }
        ends.push(one.shrink.expect("rounds").last_size < full.len());
        for sizes in [None, Some(&[300usize, 0, 400][..])] {
            let ranks = sizes.map_or(2, |s| s.len());
            let runs = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, sizes);
                let prob = Problem::new(&local, local.labels.clone(), kernel, 8.0).unwrap();
                let r = fwsvm::dist::shrink::solve(
                    comm,
                    &prob,
                    slice,
                    &Device::Cpu,
                    F64,
                    &params,
                    &sp,
                    false,
                    &mut [],
                )
                .unwrap();
                (slice, r)
            });
            for (rank, (slice, r)) in runs.iter().enumerate() {
                let g = r.gradient.as_ref().expect("every rank leaves its gradient");
                assert_eq!(
                    g[..],
                    g1[slice.first..slice.first + slice.rows],
                    "rank {rank} of {ranks}, {sp:?}"
                );
            }
        }
    }
    assert_eq!(
        ends,
        [true, false],
        "one end with points set aside, one with W whole"
    );
}

/// One-class training over ranks (γ auto): the single-process model file, on 2 and 3 ranks
/// (an empty slice included), with full gradients and with working-set rounds.
#[test]
fn one_class_over_ranks_is_the_single_process_model() {
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    let ds = random_dataset(240, 5, true, 97);
    for shrink in [
        None,
        Some(fwsvm::solver::shrink::ShrinkParams {
            margin: 0.5,
            min_size: 50,
            min_points: 0,
        }),
    ] {
        let params = TrainParams {
            c: 0.5,
            one_class: true,
            cpu: F64,
            shrink,
            solver: SolverParams {
                algorithm: Some(Algorithm::Swap),
                eps: 1e-6,
                ..Default::default()
            },
            ..Default::default()
        };
        let (one, _) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        assert!(one.one_class);
        let one_path = dir.path().join("one.model");
        one.save(&one_path).unwrap();
        let expected = std::fs::read(&one_path).unwrap();
        for sizes in [None, Some(&[100usize, 0, 140][..])] {
            let ranks = sizes.map_or(2, |s| s.len());
            let models = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, sizes);
                fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut [])
                    .unwrap()
                    .0
            });
            for (r, m) in models.iter().enumerate() {
                same_file(
                    dir.path(),
                    m,
                    &expected,
                    &format!("shrinking {}, rank {r} of {ranks}", shrink.is_some()),
                );
            }
        }
    }
}

/// Sample weights over ranks (one per row, global order; each rank keeps its own): the
/// single-process model file for two and three classes, and the single-process
/// cross-validation counts.
#[test]
fn sample_weights_over_ranks() {
    use fwsvm::train::{TrainParams, cross_validate, train};
    let dir = common::tempdir();
    let mut ds = random_dataset(180, 4, false, 101);
    let w: Vec<f64> = (0..ds.len()).map(|i| 0.25 + (i % 7) as f64 * 0.5).collect();
    for classes in [2, 3] {
        if classes == 3 {
            for i in 0..ds.len() {
                if i % 5 == 0 {
                    ds.labels[i] = 4.0;
                }
            }
        }
        let params = TrainParams {
            c: 2.0,
            cpu: F64,
            sample_weights: Some(w.clone().into()),
            solver: SolverParams {
                algorithm: Some(Algorithm::Partan),
                eps: 1e-5,
                ..Default::default()
            },
            ..Default::default()
        };
        let (one, _) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        let one_path = dir.path().join("one.model");
        one.save(&one_path).unwrap();
        let expected = std::fs::read(&one_path).unwrap();
        let cv = cross_validate(&ds, &params, 3, 5, &mut |_, _| Vec::new()).unwrap();
        let cv: Vec<(usize, usize)> = cv.folds.iter().map(|(n, c, _)| (*n, *c)).collect();
        let got = on_threads(2, |comm| {
            let (local, slice) = slice_of(&ds, comm, None);
            let m = fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut [])
                .unwrap()
                .0;
            let f = fwsvm::dist::train::cross_validate(comm, &local, slice, &params, 3, 5).unwrap();
            (m, f.iter().map(|(n, c, _)| (*n, *c)).collect::<Vec<_>>())
        });
        for (r, (m, f)) in got.iter().enumerate() {
            same_file(
                dir.path(),
                m,
                &expected,
                &format!("{classes} classes, rank {r}"),
            );
            assert_eq!(f, &cv, "{classes} classes, rank {r}: folds");
        }
        // Pairs and folds dealt whole.
        let dealt = on_threads(2, |comm| {
            let (local, slice) = slice_of(&ds, comm, None);
            let all = fwsvm::dist::plan::gather_dataset(comm, &local, &slice).unwrap();
            let m = fwsvm::dist::train::train_pairs_dealt(comm, &all, &params)
                .unwrap()
                .0;
            let f = fwsvm::dist::train::cross_validate_tasks(
                comm,
                &all,
                std::slice::from_ref(&params),
                3,
                5,
            )
            .unwrap()
            .swap_remove(0);
            (m, f.iter().map(|&(n, c, _)| (n, c)).collect::<Vec<_>>())
        });
        for (r, (m, f)) in dealt.iter().enumerate() {
            same_file(
                dir.path(),
                m,
                &expected,
                &format!("{classes} classes, dealt, rank {r}"),
            );
            assert_eq!(f, &cv, "{classes} classes, dealt, rank {r}: folds");
        }
    }
}

/// Data with many repeated rows (one process works per distinct row, in groups: KDD99's
/// case) over ranks: every rank groups its own rows exactly when one process groups all of
/// them (here the slices alone are too small to), the rows an update or α touched keep the
/// ungrouped arithmetic, and the exact sums merge α's repeated points as one process does —
/// so the model file is the single-process one, with working-set rounds (whose W is grouped
/// by the same rule) and with patterns whose two copies sit on different ranks.
#[test]
fn repeated_rows_over_ranks_are_the_single_process_model() {
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    for sparse in [false, true] {
        let base = random_dataset(400, 5, sparse, 113);
        // A third of the patterns twice, the others 20 times, shuffled.
        let mut rows: Vec<usize> = (0..base.len())
            .flat_map(|p| std::iter::repeat_n(p, if p % 3 == 0 { 2 } else { 20 }))
            .collect();
        let mut rng = fwsvm::rng::SplitMix64::new(7);
        for i in (1..rows.len()).rev() {
            rows.swap(i, rng.below(i + 1));
        }
        let ds = base.subset(&rows);
        let full = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 2.0).unwrap();
        assert!(
            full.distinct_rows().is_some(),
            "one process groups the repeats"
        );
        // The working-set solver merges the repeats first (its rounds over ranks are not one
        // process's to the bit: `ws_by_rounds_over_ranks_reaches_the_single_process_optimum`).
        for (alg, shrink) in [
            (Algorithm::Partan, false),
            (Algorithm::Swap, true),
            (Algorithm::Ws, false),
        ] {
            let params = TrainParams {
                c: 2.0,
                gamma: fwsvm::train::Gamma::Value(1.0),
                cpu: F64,
                shrink: Some(fwsvm::solver::shrink::ShrinkParams {
                    margin: 0.02,
                    min_size: 400,
                    min_points: if shrink { 1000 } else { usize::MAX },
                }),
                solver: SolverParams {
                    algorithm: Some(alg),
                    eps: 1e-4,
                    ..Default::default()
                },
                ..Default::default()
            };
            let tag = format!("{alg}, sparse {sparse}, shrinking {shrink}");
            let (one, reports) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
            if shrink {
                let st = reports[0]
                    .result
                    .shrink
                    .as_ref()
                    .expect("working-set rounds");
                assert!(st.shrinks >= 1, "{tag}: {st:?}");
            }
            let one_path = dir.path().join("one.model");
            one.save(&one_path).unwrap();
            let expected = std::fs::read(&one_path).unwrap();
            for ranks in [2, 3] {
                let got = on_threads(ranks, |comm| {
                    let (local, slice) = slice_of(&ds, comm, None);
                    let alone = Problem::new(
                        &local,
                        local.labels.clone(),
                        Kernel::Rbf { gamma: 1.0 },
                        2.0,
                    )
                    .unwrap();
                    assert!(
                        alone.distinct_rows().is_none(),
                        "a slice alone is not grouped"
                    );
                    fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut []).unwrap()
                });
                for (r, (model, res)) in got.iter().enumerate() {
                    same_file(
                        dir.path(),
                        model,
                        &expected,
                        &format!("{tag}: rank {r} of {ranks}"),
                    );
                    assert_eq!(res[0].iterations, reports[0].result.iterations, "{tag}");
                    assert_eq!(
                        res[0].certified_gap, reports[0].result.certified_gap,
                        "{tag}"
                    );
                }
            }
        }
    }
}

/// SimpleSVM over ranks (the C-SVM with its own bias): every rank keeps the labels, boxes and
/// α of all points, the violator reduction, gathers and the KKT block's columns go through
/// the distributed backend, and the certification takes the exact gradient from the rows'
/// owners. The model file, the iteration count, the certified figures and α equal one
/// process's, for both violator rules and both linear solvers, dense and sparse data, class
/// and sample weights, three classes, and slices with an empty rank.
#[test]
fn simplesvm_over_ranks_is_the_single_process_model() {
    use fwsvm::solver::simple_svm::{LinearSolver, SimpleParams, Violator};
    use fwsvm::train::{TrainParams, train};
    let dir = common::tempdir();
    let cases = [
        (false, 2, Violator::Greedy, LinearSolver::Cholesky, false),
        (true, 2, Violator::Queue, LinearSolver::Cholesky, false),
        (false, 3, Violator::Greedy, LinearSolver::Cg, true),
        (true, 3, Violator::Queue, LinearSolver::Cg, false),
    ];
    for (sparse, classes, violator, solver, weighted) in cases {
        let mut ds = random_dataset(180, 5, sparse, 53);
        if classes == 3 {
            for i in 0..ds.len() {
                let mut x = vec![0.0; ds.n_features()];
                ds.row(i).scatter_f64(&mut x);
                ds.labels[i] = if x[1] < -0.3 {
                    1.0
                } else if x[1] < 0.3 {
                    2.0
                } else {
                    3.0
                };
            }
        }
        let m = ds.len();
        let params = TrainParams {
            c: 3.0,
            class_weights: vec![(ds.labels[0], 1.5)],
            sample_weights: weighted.then(|| (0..m).map(|i| 0.5 + (i % 4) as f64 * 0.5).collect()),
            cpu: F64,
            solver: SolverParams {
                algorithm: Some(Algorithm::SimpleSvm),
                eps: 1e-6,
                simple: SimpleParams { violator, solver },
                ..Default::default()
            },
            ..Default::default()
        };
        let tag = format!(
            "sparse {sparse}, {classes} classes, {violator:?}, {solver:?}, weighted {weighted}"
        );
        let (one, reports) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        assert!(
            reports
                .iter()
                .all(|r| r.result.certified_gap.unwrap() <= 1e-5 && r.result.iterations >= 10),
            "{tag}: one process converged, over many violators"
        );
        let one_path = dir.path().join("one.model");
        one.save(&one_path).unwrap();
        let expected = std::fs::read(&one_path).unwrap();
        let first = m / 2;
        for sizes in [None, Some(vec![first, 0, m - first])] {
            let ranks = sizes.as_ref().map_or(2, |s| s.len());
            let got = on_threads(ranks, |comm| {
                let (local, slice) = slice_of(&ds, comm, sizes.as_deref());
                fwsvm::dist::train::train_model(comm, &local, slice, &params, &mut []).unwrap()
            });
            for (r, (model, results)) in got.iter().enumerate() {
                same_file(
                    dir.path(),
                    model,
                    &expected,
                    &format!("{tag}: rank {r} of {ranks}"),
                );
                assert_eq!(results.len(), reports.len());
                for (a, b) in reports.iter().map(|r| &r.result).zip(results) {
                    assert_eq!(a.iterations, b.iterations, "{tag}");
                    assert_eq!(a.certified_f, b.certified_f, "{tag}");
                    assert_eq!(a.certified_gap, b.certified_gap, "{tag}");
                    assert_eq!(a.rho, b.rho, "{tag}");
                    assert_eq!(a.alpha.indices(), b.alpha.indices(), "{tag}");
                    assert_eq!(a.alpha.weights(), b.alpha.weights(), "{tag}");
                }
            }
        }
    }
}

/// Partial sums (`TrainParams::partial_sums`): each rank adds its own part of αᵀg, PARTAN's
/// slope and curvature and SWAP-2o's best decrease, combined by one sum and one location
/// reduction. The same optimum as one process within the certified gaps, for every FW
/// variant (working-set rounds included), with fewer bytes sent than the exact gathers.
#[test]
fn partial_sums_reach_the_single_process_optimum_with_less_traffic() {
    use fwsvm::train::{TrainParams, train};
    let ds = random_dataset(600, 6, true, 91);
    for (alg, shrink) in [
        (Algorithm::Fw, false),
        (Algorithm::Mfw, false),
        (Algorithm::Swap, false),
        (Algorithm::Swap2, false),
        (Algorithm::Partan, false),
        (Algorithm::Partan, true),
        (Algorithm::Cvm, false),
    ] {
        let params = TrainParams {
            c: 4.0,
            gamma: fwsvm::train::Gamma::Value(0.5),
            cpu: F64,
            shrink: Some(fwsvm::solver::shrink::ShrinkParams {
                margin: 0.05,
                min_size: 200,
                min_points: if shrink { 0 } else { usize::MAX },
            }),
            solver: SolverParams {
                algorithm: Some(alg),
                eps: 1e-4,
                ..Default::default()
            },
            ..Default::default()
        };
        let tag = format!("{alg}, shrinking {shrink}");
        let (_, one) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
        let (f1, g1) = (
            one[0].result.certified_f.unwrap(),
            one[0].result.certified_gap.unwrap(),
        );
        let mut bytes = [0u64; 2];
        for (n, partial) in [false, true].into_iter().enumerate() {
            let p = TrainParams {
                partial_sums: partial,
                ..params.clone()
            };
            let got = on_threads(2, |comm| {
                let (local, slice) = slice_of(&ds, comm, None);
                let before = comm.traffic();
                let (_, res) =
                    fwsvm::dist::train::train_model(comm, &local, slice, &p, &mut []).unwrap();
                (res, comm.traffic().since(&before).bytes)
            });
            for (r, (res, sent)) in got.iter().enumerate() {
                let (fp, gp) = (res[0].certified_f.unwrap(), res[0].certified_gap.unwrap());
                assert!(
                    (f1 - fp).abs() <= g1.max(gp),
                    "{tag}, partial {partial}, rank {r}: f {f1} vs {fp}, gaps {g1} {gp}"
                );
                assert!(
                    gp <= 1e-4 * 1.01,
                    "{tag}, partial {partial}, rank {r}: gap {gp}"
                );
                if r == 0 {
                    bytes[n] = *sent / res[0].iterations.max(1);
                }
            }
        }
        // Per iteration: the exact run gathers the active set's entries, the partial one not.
        assert!(bytes[1] < bytes[0], "{tag}: bytes per iteration {bytes:?}");
    }
}
