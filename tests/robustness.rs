//! No panic on any input: every algorithm trains a valid model on tiny random datasets (1–3
//! features, 1–5 rows per class, dense and sparse, duplicates and all-zero rows included), and
//! the LIBSVM-data and model parsers answer mutated files with errors, never a panic.

mod common;

use fwsvm::data::{Dataset, Features, Format, ReadOptions, read_dataset};
use fwsvm::model::Model;
use fwsvm::solver::Algorithm;
use fwsvm::train::{Gamma, KernelKind, TrainParams, train};
use proptest::prelude::*;
use std::io::Write;

/// A small dataset: `rows[k] = (class, features)`; stored dense or as CSR (zeros dropped).
fn dataset(rows: &[(usize, Vec<f32>)], d: usize, dense: bool, labels: &[f64]) -> Dataset {
    let y: Vec<f64> = rows.iter().map(|(c, _)| labels[*c]).collect();
    let features = if dense {
        Features::Dense {
            n_features: d,
            values: rows.iter().flat_map(|(_, x)| x.iter().copied()).collect(),
        }
    } else {
        let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
        for (_, x) in rows {
            for (j, &v) in x.iter().enumerate() {
                if v != 0.0 {
                    indices.push(j as u32);
                    values.push(v);
                }
            }
            indptr.push(indices.len());
        }
        Features::Sparse {
            n_features: d,
            indptr,
            indices,
            values,
        }
    };
    Dataset {
        features,
        labels: y,
    }
}

/// Feature values drawn from a few that collide (0, duplicates) and a continuous range.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(1.0f32),
        Just(-1.0f32),
        (-3.0f32..3.0f32),
        (-1e4f32..1e4f32),
    ]
}

/// (d, rows grouped by class, number of classes).
fn small_problem() -> impl Strategy<Value = (usize, Vec<(usize, Vec<f32>)>, usize)> {
    (1usize..=3, 2usize..=3).prop_flat_map(|(d, k)| {
        let class = |c: usize| {
            prop::collection::vec(prop::collection::vec(value(), d), 1..=5)
                .prop_map(move |xs| xs.into_iter().map(|x| (c, x)).collect::<Vec<_>>())
        };
        let per_class: Vec<_> = (0..k).map(class).collect();
        (Just(d), per_class, Just(k))
            .prop_map(|(d, groups, k)| (d, groups.into_iter().flatten().collect::<Vec<_>>(), k))
    })
}

fn algorithm() -> impl Strategy<Value = (Algorithm, usize)> {
    let all = Algorithm::ALL.to_vec();
    (
        prop::sample::select(all),
        prop_oneof![3 => Just(0usize), 1 => Just(3usize)],
    )
        .prop_map(|(a, s)| {
            // Randomized iterations exist for the FW variants and the CVM.
            let sample = if Algorithm::FW.contains(&a) || a == Algorithm::Cvm {
                s
            } else {
                0
            };
            (a, sample)
        })
}

fn kernel() -> impl Strategy<Value = (KernelKind, Gamma)> {
    prop_oneof![
        Just((KernelKind::Rbf, Gamma::Auto)),
        Just((KernelKind::Rbf, Gamma::Value(0.5))),
        Just((KernelKind::Linear, Gamma::Auto)),
        Just((KernelKind::Poly, Gamma::Value(0.3))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn every_algorithm_trains_a_valid_model_on_tiny_data(
        (d, rows, k) in small_problem(),
        dense in any::<bool>(),
        (alg, sample) in algorithm(),
        (kind, gamma) in kernel(),
        c in prop_oneof![Just(0.1f64), Just(1.0), Just(100.0)],
        init_size in prop_oneof![Just(0usize), Just(1), Just(20)],
    ) {
        let labels = [1.0, -1.0, 7.0];
        let ds = dataset(&rows, d, dense, &labels[..k]);
        let mut params = TrainParams {
            kernel: kind,
            gamma,
            c,
            sample,
            ..TrainParams::default()
        };
        params.solver.algorithm = Some(alg);
        params.solver.init_size = init_size;
        params.solver.max_iter = 5_000;
        params.solver.time_limit = Some(std::time::Duration::from_secs(1));
        let (model, reports) = train(&ds, &params, &mut |_| Vec::new())
            .map_err(|e| TestCaseError::fail(format!("{alg} (sample {sample}): {e}")))?;
        prop_assert_eq!(model.n_classes(), k);
        prop_assert_eq!(reports.len(), k * (k - 1) / 2);
        prop_assert!(model.total_sv() >= 1);
        prop_assert_eq!(model.nr_sv.iter().sum::<usize>(), model.total_sv());
        prop_assert!(model.sv_coef.iter().flatten().all(|v| v.is_finite()));
        prop_assert!(model.rho.iter().all(|v| v.is_finite()));
        for r in &reports {
            prop_assert!(r.result.f.is_finite());
            if let Some(g) = r.result.certified_gap {
                prop_assert!(g.is_finite());
            }
        }
        let pred = model.predict(&ds);
        prop_assert!(pred.iter().all(|p| labels[..k].contains(p)));
        // The model survives its own file format.
        let dir = common::tempdir();
        let path = dir.path().join("m.model");
        model.save(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = Model::load(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back.predict(&ds), pred);
    }
}

/// A valid LIBSVM data file and a valid model to mutate.
const DATA: &str = "+1 1:0.5 3:-1\n-1 2:1e-3 3:2\n# comment\n\n+1 1:1 2:2 3:3\n-1 1:-0.25\n";

fn model_text() -> String {
    let dir = common::tempdir();
    let p = dir.path().join("d.txt");
    std::fs::write(&p, DATA).unwrap();
    let ds = read_dataset(&p, &ReadOptions::default()).unwrap();
    let (model, _) = train(&ds, &TrainParams::default(), &mut |_| Vec::new()).unwrap();
    let mut out = Vec::new();
    model.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// One edit of a text: delete, duplicate or replace a byte range, or insert a hostile token.
fn mutate(text: &str, ops: &[(u8, usize, usize, usize)]) -> Vec<u8> {
    const TOKENS: &[&[u8]] = &[
        b"nan",
        b"inf",
        b"-inf",
        b"1e400",
        b"-0",
        b":",
        b"::",
        b" ",
        b"\n",
        b"0:1",
        b"4294967296:1",
        b"18446744073709551616",
        b"-1",
        b"1:1 1:2",
        b"2:1 1:1",
        b"\xff\xfe",
        b"\0",
        b"\t",
        b"#",
        b"SV",
        b"nr_class 0",
        b"nr_class 100000000",
        b"total_sv 99999999999",
        b"rho",
        b"label",
        b"kernel_type rbf",
        b"gamma -1",
        b"degree 0",
        b"svm_type one_class",
        b"nr_sv 1 1",
    ];
    let mut b = text.as_bytes().to_vec();
    for &(op, at, len, tok) in ops {
        let n = b.len();
        let at = if n == 0 { 0 } else { at % (n + 1) };
        let end = (at + len % 12).min(n);
        match op % 4 {
            0 => {
                b.drain(at..end);
            }
            1 => {
                let piece = b[at..end].to_vec();
                b.splice(at..at, piece);
            }
            2 => {
                b.splice(at..end, TOKENS[tok % TOKENS.len()].iter().copied());
            }
            _ => {
                b.splice(at..at, TOKENS[tok % TOKENS.len()].iter().copied());
            }
        }
    }
    b
}

fn ops() -> impl Strategy<Value = Vec<(u8, usize, usize, usize)>> {
    prop::collection::vec(
        (any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()),
        1..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn mutated_data_files_give_errors_not_panics(edits in ops(), csv in any::<bool>()) {
        let dir = common::tempdir();
        let p = dir.path().join("d.txt");
        let text = if csv { "1,0.5,2\n-1,3,4\n1,0,0\n".to_string() } else { DATA.to_string() };
        std::fs::File::create(&p).unwrap().write_all(&mutate(&text, &edits)).unwrap();
        let opts = ReadOptions {
            format: if csv { Format::Csv } else { Format::Libsvm },
            label_col: 0,
        };
        // Ok or Err are both fine; an Ok dataset must be usable.
        if let Ok(ds) = read_dataset(&p, &opts) {
            prop_assert_eq!(ds.labels.len(), ds.len());
            for i in 0..ds.len() {
                let _ = ds.row(i).sq_norm();
            }
            if ds.classes().len() >= 2 {
                let mut params = TrainParams::default();
                params.solver.max_iter = 2_000;
                let _ = train(&ds, &params, &mut |_| Vec::new());
            }
        }
    }

    #[test]
    fn mutated_model_files_give_errors_not_panics(edits in ops()) {
        let dir = common::tempdir();
        let p = dir.path().join("m.model");
        std::fs::File::create(&p).unwrap().write_all(&mutate(&MODEL.with(|m| m.clone()), &edits)).unwrap();
        if let Ok(m) = Model::load(&p) {
            // A model that loads predicts without panicking.
            let q = dir.path().join("d.txt");
            std::fs::write(&q, DATA).unwrap();
            let ds = read_dataset(&q, &ReadOptions::default()).unwrap();
            let pred = m.predict(&ds);
            prop_assert_eq!(pred.len(), ds.len());
        }
    }
}

thread_local! {
    static MODEL: String = model_text();
}

/// A file of labels alone (no feature on any row) trains: every kernel, both column precisions,
/// the working-set and a per-iteration solver. It once panicked on the zero-width bit layout.
#[test]
fn labels_without_features_train() {
    let dir = common::tempdir();
    let p = dir.path().join("labels.txt");
    std::fs::write(&p, "1\n-1\n1\n-1\n1\n").unwrap();
    let ds = read_dataset(&p, &ReadOptions::default()).unwrap();
    assert_eq!(ds.n_features(), 0);
    for kind in [KernelKind::Rbf, KernelKind::Linear, KernelKind::Poly] {
        for precision in [
            fwsvm::backend::cpu::Precision::F32,
            fwsvm::backend::cpu::Precision::F64,
        ] {
            for alg in [Algorithm::Ws, Algorithm::Fw] {
                let mut params = TrainParams {
                    kernel: kind,
                    ..TrainParams::default()
                };
                params.cpu.precision = Some(precision);
                params.solver.algorithm = Some(alg);
                let (model, _) = train(&ds, &params, &mut |_| Vec::new())
                    .unwrap_or_else(|e| panic!("{kind:?} {precision:?} {alg}: {e}"));
                assert_eq!(model.n_classes(), 2);
                assert!(model.total_sv() >= 1);
            }
        }
    }
}
