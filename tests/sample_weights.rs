//! Per-row weights (scikit-learn's `sample_weight`): in the L2-SVM's primal each row costs
//! C_i ξ_i²/2 with C_i = C·s_i, so a row of weight 2 is the row given twice, and the trained
//! decision function must be the same either way (up to the certified gaps, closed here).

mod common;

use common::problems::random_dataset;
use fwsvm::backend::cpu::Precision;
use fwsvm::data::Dataset;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::Algorithm;
use fwsvm::train::{Gamma, TrainParams, train};

/// Integer weights 1..=3 and the dataset with each row repeated that many times.
fn weighted_and_repeated(ds: &Dataset) -> (Vec<f64>, Dataset) {
    let w: Vec<f64> = (0..ds.len()).map(|i| (1 + (i * 7) % 3) as f64).collect();
    let rows: Vec<usize> = (0..ds.len())
        .flat_map(|i| std::iter::repeat_n(i, w[i] as usize))
        .collect();
    (w, ds.subset(&rows))
}

fn tight(alg: Algorithm) -> TrainParams {
    let mut p = TrainParams {
        gamma: Gamma::Value(0.5),
        c: 2.0,
        shrink: None,
        ..Default::default()
    };
    p.solver.algorithm = Some(alg);
    p.solver.eps = 1e-12;
    p.solver.rel_eps = Some(1e-12);
    p.solver.max_iter = 200_000;
    p.cpu.precision = Some(Precision::F64);
    p
}

fn decisions(params: &TrainParams, train_on: &Dataset, test: &Dataset) -> Vec<Vec<f64>> {
    let (model, reports) = train(train_on, params, &mut |_| Vec::new()).unwrap();
    for r in &reports {
        assert!(
            r.result.certified_gap.unwrap() < 1e-9,
            "{:?}",
            r.result.stop
        );
    }
    model.predict_with_decisions(test).1
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64, what: &str) {
    let worst = a
        .iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(worst <= tol, "{what}: decision values differ by {worst:e}");
}

#[test]
fn a_weight_of_k_is_the_row_given_k_times() {
    let ds = random_dataset(90, 4, false, 11);
    let (w, repeated) = weighted_and_repeated(&ds);
    for alg in [
        Algorithm::Swap,
        Algorithm::Mfw,
        Algorithm::Cvm,
        Algorithm::SimpleSvm,
    ] {
        let plain = tight(alg);
        let weighted = TrainParams {
            sample_weights: Some(w.clone().into()),
            ..plain.clone()
        };
        let a = decisions(&weighted, &ds, &ds);
        let b = decisions(&plain, &repeated, &ds);
        assert_close(&a, &b, 1e-6, &format!("{alg}"));
        // And the weights change the model: without them it is another one.
        let c = decisions(&plain, &ds, &ds);
        // (SWAP, MFW and the CVM close the gap to 1e-14 here in under 4,000 iterations;
        // PARTAN stays near 1e-7 after 2·10⁶.)
        let moved = a
            .iter()
            .flatten()
            .zip(c.iter().flatten())
            .any(|(x, y)| (x - y).abs() > 1e-3);
        assert!(moved, "{alg}: weights had no effect");
    }
}

#[test]
fn weights_follow_the_rows_into_one_versus_one_and_one_class() {
    let mut ds = random_dataset(90, 3, true, 5);
    ds.labels = (0..ds.len()).map(|i| (i % 3) as f64).collect();
    let (w, repeated) = weighted_and_repeated(&ds);
    let plain = tight(Algorithm::Swap);
    let weighted = TrainParams {
        sample_weights: Some(w.clone().into()),
        ..plain.clone()
    };
    assert_close(
        &decisions(&weighted, &ds, &ds),
        &decisions(&plain, &repeated, &ds),
        1e-6,
        "one-versus-one",
    );
    let one = TrainParams {
        one_class: true,
        ..plain.clone()
    };
    let one_w = TrainParams {
        one_class: true,
        ..weighted.clone()
    };
    assert_close(
        &decisions(&one_w, &ds, &ds),
        &decisions(&one, &repeated, &ds),
        1e-6,
        "one-class",
    );
}

#[test]
fn row_weights_scale_the_diagonal_with_the_class_weights() {
    let ds = random_dataset(6, 2, false, 3);
    let y: Vec<f64> = ds.labels.clone();
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let s = vec![1.0, 2.0, 0.5, 4.0, 1.0, 3.0];
    let plain = Problem::new(&ds, y.clone(), kernel, 2.0).unwrap();
    // Row weights before or after class weights: the same diagonal.
    let a = Problem::new(&ds, y.clone(), kernel, 2.0)
        .unwrap()
        .with_row_weights(s.clone())
        .unwrap()
        .with_class_weights(3.0, 0.5)
        .unwrap();
    let b = Problem::new(&ds, y.clone(), kernel, 2.0)
        .unwrap()
        .with_class_weights(3.0, 0.5)
        .unwrap()
        .with_row_weights(s.clone())
        .unwrap();
    for i in 0..ds.len() {
        let class = if y[i] > 0.0 { 3.0 } else { 0.5 };
        let want = plain.q(i, i) - 0.5 + 1.0 / (2.0 * class * s[i]);
        assert!((a.q(i, i) - want).abs() < 1e-12, "row {i}");
        assert_eq!(a.q(i, i), b.q(i, i));
        assert_eq!(a.cost_factor(i), class * s[i]);
        for j in 0..ds.len() {
            if j != i {
                assert_eq!(a.q(i, j), plain.q(i, j));
            }
        }
    }
}

#[test]
fn bad_weights_are_refused_by_row() {
    let ds = random_dataset(5, 2, false, 1);
    let mut w = vec![1.0; 5];
    w[3] = 0.0;
    let p = TrainParams {
        sample_weights: Some(w.into()),
        ..Default::default()
    };
    let e = train(&ds, &p, &mut |_| Vec::new()).unwrap_err().to_string();
    assert!(e.contains("row 4") && e.contains("positive"), "{e}");
    let p = TrainParams {
        sample_weights: Some(vec![1.0; 4].into()),
        ..Default::default()
    };
    let e = train(&ds, &p, &mut |_| Vec::new()).unwrap_err().to_string();
    assert!(e.contains("4 sample weights for 5 rows"), "{e}");
}

/// A point's cost C_i (C times its class's and row's weights) below `MIN_C` is refused,
/// naming what made it: 1/C_i on the diagonal would overflow the f32 kernel columns. At the
/// bound itself the problem builds.
#[test]
fn costs_below_the_smallest_are_refused() {
    let ds = random_dataset(6, 2, false, 3);
    let y: Vec<f64> = ds.labels.clone();
    let kernel = Kernel::Rbf { gamma: 0.5 };
    let min = fwsvm::problem::MIN_C;
    assert!(Problem::new(&ds, y.clone(), kernel, min).is_ok());
    let e = Problem::new(&ds, y.clone(), kernel, min / 10.0)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("C is 1e-31, below the smallest cost 1e-30"),
        "{e}"
    );
    let e = Problem::new(&ds, y.clone(), kernel, 1e-20)
        .unwrap()
        .with_class_weights(1.0, 1e-20)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("C times a class weight is 1e-40"), "{e}");
    let mut s = vec![1.0; ds.len()];
    s[2] = 1e-15;
    let e = Problem::new(&ds, y, kernel, 1e-20)
        .unwrap()
        .with_row_weights(s)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("C times row 3's weight 1e-15"), "{e}");
}

/// Repeated points merged (`TrainParams::merge_duplicates`, the default of ws) train the
/// problem with every copy kept: the same optimum and decision values, with one support vector
/// per group; with sample weights the group's weight is the sum of its rows'. One-versus-one
/// pairs merge their own rows (three classes).
#[test]
fn merged_duplicates_give_the_decision_function_of_the_kept_rows() {
    for (classes, sparse) in [(2, false), (3, true)] {
        let mut base = random_dataset(60, 3, sparse, 17);
        if classes == 3 {
            base.labels = (0..60).map(|i| (i % 3) as f64).collect();
        }
        let (_, repeated) = weighted_and_repeated(&base);
        let s: Vec<f64> = (0..repeated.len()).map(|i| 0.5 + (i % 4) as f64).collect();
        for alg in [Algorithm::Ws, Algorithm::Swap] {
            for weights in [None, Some(s.clone())] {
                let run = |merge: bool| {
                    let mut p = tight(alg);
                    p.merge_duplicates = Some(merge);
                    p.sample_weights = weights.clone().map(Into::into);
                    let (model, reports) = train(&repeated, &p, &mut |_| Vec::new()).unwrap();
                    (model, reports)
                };
                let ((mk, rk), (mm, rm)) = (run(false), run(true));
                let what = format!("{alg:?}, {classes} classes, weights {}", weights.is_some());
                assert_close(
                    &mk.predict_with_decisions(&base).1,
                    &mm.predict_with_decisions(&base).1,
                    1e-7,
                    &what,
                );
                for (k, m) in rk.iter().zip(&rm) {
                    for r in [k, m] {
                        assert!(r.result.certified_gap.unwrap() < 1e-9, "{what}: not closed");
                    }
                    let (fk, fm) = (k.result.certified_f.unwrap(), m.result.certified_f.unwrap());
                    assert!(
                        (fk - fm).abs() <= 1e-9 * fk.abs(),
                        "{what}: f {fk} against {fm}"
                    );
                    assert_eq!(k.merged, None, "{what}");
                    let points = m.merged.expect("merged");
                    assert!(points < m.m, "{what}: {points} of {} rows", m.m);
                }
                assert!(mm.total_sv() < mk.total_sv(), "{what}: support vectors");
            }
        }
    }
}
