//! The class pairs of a one-versus-one training run side by side on a multi-core CPU when no
//! observer is asked for, and one after the other otherwise: either way the model is the same,
//! bit for bit.

use fwsvm::solver::{Observer, Progress};
use fwsvm::train::{PairInfo, TrainParams, train};

/// A four-class set: the noisy checkerboard's positive cells split in three classes by row
/// index (labels 1, 2, 3), its negative cells class 4.
fn four_classes() -> fwsvm::data::Dataset {
    let mut ds = fwsvm::data::synth::checkerboard(2_400, 4, 7);
    for (i, y) in ds.labels.iter_mut().enumerate() {
        *y = if *y > 0.0 { 1.0 + (i % 3) as f64 } else { 4.0 };
    }
    ds
}

fn model_text(m: &fwsvm::model::Model) -> Vec<u8> {
    let mut out = Vec::new();
    m.write(&mut out).unwrap();
    out
}

#[test]
fn pairs_side_by_side_write_the_model_of_pairs_one_after_the_other() {
    let ds = four_classes();
    let params = TrainParams::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    // No observers: the six pairs (each under 50,000 points) run side by side.
    let (side, reports) = pool.install(|| train(&ds, &params, &mut |_| Vec::new()).unwrap());
    assert_eq!(reports.len(), 6);
    // An observer for every pair: one after the other, each observed from start to end.
    let mut seen = Vec::new();
    let (serial, _) = pool.install(|| {
        train(&ds, &params, &mut |info: &PairInfo| {
            seen.push(info.index);
            vec![Box::new(|_: &Progress| {}) as Box<dyn Observer>]
        })
        .unwrap()
    });
    assert_eq!(
        seen,
        (0..6).collect::<Vec<_>>(),
        "the factory is asked in pair order"
    );
    let mut labels = side.labels.clone();
    labels.sort_by(f64::total_cmp);
    assert_eq!(labels, vec![1.0, 2.0, 3.0, 4.0]);
    assert!(side.total_sv() > 0);
    assert_eq!(
        String::from_utf8_lossy(&model_text(&side)),
        String::from_utf8_lossy(&model_text(&serial))
    );
}
