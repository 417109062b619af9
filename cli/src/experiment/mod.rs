//! The experiment harness behind `fwsvm bench` and `fwsvm grid`'s figures: the evaluation
//! matrix ([`matrix`]) and its report ([`report`]), the scaling bench ([`scale`]), the
//! statistical tests ([`stats`]) and the SVG charts (`charts`, with the `charts` feature,
//! which `cli` turns on). The CLI only parses arguments, checks files and shows progress.

pub mod charts;
pub mod matrix;
pub mod report;
pub mod scale;
pub mod stats;

/// The percentage of `test`'s rows whose label `model` predicts on `device` (the GPU where the
/// work pays for it, as `fwsvm predict`).
pub fn test_accuracy(
    device: &fwsvm::backend::Device,
    model: &fwsvm::model::Model,
    test: &fwsvm::data::Dataset,
) -> fwsvm::error::Result<f64> {
    let pred = fwsvm::predict::labels_on_device(
        device,
        model,
        test,
        fwsvm::backend::GPU_PREDICT_MIN_WORK,
        None,
    )?;
    let correct = pred
        .iter()
        .zip(&test.labels)
        .filter(|(p, y)| p == y)
        .count();
    Ok(100.0 * correct as f64 / test.len().max(1) as f64)
}
