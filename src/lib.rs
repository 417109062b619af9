//! # fwsvm
//!
//! Kernel SVM training with the Frank–Wolfe family of methods (FW, MFW, SWAP, SWAP-2o,
//! PARTAN) on the L2-SVM in its Core-Vector-Machine form — a quadratic on the unit simplex —
//! with LIBSVM-compatible models.
//!
//! Data flow one way: file → [`data::Dataset`] → [`problem::Problem`] → [`backend::Backend`]
//! → [`solver`] variant → [`model::Model`] → file or predictions.
//!
//! ```
//! use fwsvm::prelude::*;
//!
//! // Two well-separated clusters in the plane.
//! let (mut ip, mut ix, mut vs, mut y) = (vec![0], vec![], vec![], vec![]);
//! for i in 0..40 {
//!     let c = if i % 2 == 0 { 1.0 } else { -1.0 };
//!     ix.extend([0u32, 1]);
//!     vs.extend([c as f32 + 0.01 * i as f32, -c as f32]);
//!     ip.push(ix.len());
//!     y.push(c);
//! }
//! let ds = Dataset::from_csr(2, ip, ix, vs, y);
//! let (model, reports) = train(&ds, &TrainParams::default(), &mut |_| Vec::new()).unwrap();
//! assert!(reports[0].result.certified_gap.unwrap() <= 1e-4);
//! assert_eq!(model.predict(&ds), ds.labels);
//! ```

pub mod active;
pub mod backend;
pub mod bench;
pub(crate) mod budget;
pub mod comm;
pub mod data;
pub(crate) mod decimal;
pub mod dist;
pub(crate) mod duplicates;
pub mod error;
pub mod interrupt;
pub mod kernel;
pub mod model;
pub mod output;
pub mod predict;
pub mod probability;
pub mod problem;
pub mod rng;
pub mod solver;
pub mod stop;
pub(crate) mod team;
pub mod train;
pub(crate) mod util;

pub use error::{Error, Result};

/// What a program that trains and predicts needs, in one `use fwsvm::prelude::*;`: reading
/// data, the training settings and entry point, the device choice, the model.
pub mod prelude {
    pub use crate::backend::{BackendChoice, Device, DeviceRequest};
    pub use crate::data::{Dataset, read_libsvm};
    pub use crate::error::{Error, Result};
    pub use crate::kernel::Kernel;
    pub use crate::model::Model;
    pub use crate::solver::{Algorithm, StopReason};
    pub use crate::train::{Gamma, KernelKind, TrainParams, train};
}
