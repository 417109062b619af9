//! Prediction on a device: the model's decision values on the CPU ([`Model`]'s own
//! exact product) or on a GPU ([`gpu`]), chosen by the device the caller opened. It sits above
//! both the backends and the model, so that neither needs the other's types for it.

#[cfg(feature = "gpu")]
pub mod gpu;

use crate::backend::Device;
use crate::backend::cpu::Precision;
use crate::data::Dataset;
use crate::error::Result;
use crate::model::Model;

/// Labels and decision values of `ds` under `model`, on `device`. With `min_work`,
/// problems of fewer rows × SVs run on the CPU; a device failure falls back to the CPU
/// when the device was chosen by `--backend auto`. `precision` None means f64 where the
/// adapter has SHADER_F64: an L2-SVM's decision values are O(f), often 1e-5, and an f32
/// sum over thousands of SVs flips labels near the boundary.
pub fn on_device(
    device: &Device,
    model: &Model,
    ds: &Dataset,
    min_work: u64,
    precision: Option<Precision>,
) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    match device {
        Device::Cpu => {
            let _ = (precision, min_work);
            Ok(model.predict_with_decisions(ds))
        }
        #[cfg(feature = "gpu")]
        Device::Gpu {
            ctx,
            cfg,
            fallback,
            shared,
        } => {
            if (ds.len() as u64).saturating_mul(model.total_sv() as u64) < min_work {
                return Ok(model.predict_with_decisions(ds));
            }
            let precision = precision.unwrap_or(if ctx.f64 {
                Precision::F64
            } else {
                Precision::F32
            });
            let cfg = crate::backend::gpu::GpuConfig { precision, ..*cfg };
            let view = shared.as_ref().map(crate::backend::SharedRows::view);
            match gpu::predict(model, ds, ctx, cfg, view) {
                Ok(r) => Ok(r),
                Err(e) => {
                    crate::backend::or_else_on_cpu(*fallback, e, "predicting on the CPU", || {
                        model.predict_with_decisions(ds)
                    })
                }
            }
        }
    }
}

/// The labels alone of [`on_device`]: on the CPU through [`Model::predict`], which screens
/// two-class RBF models in f32 (the same labels, without every decision value in f64).
pub fn labels_on_device(
    device: &Device,
    model: &Model,
    ds: &Dataset,
    min_work: u64,
    precision: Option<Precision>,
) -> Result<Vec<f64>> {
    match device {
        Device::Cpu => {
            let _ = (precision, min_work);
            Ok(model.predict(ds))
        }
        #[cfg(feature = "gpu")]
        Device::Gpu { .. } => Ok(on_device(device, model, ds, min_work, precision)?.0),
    }
}
