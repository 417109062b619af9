//! Where training runs ([`Device`]: the CPU, or a GPU with its configuration), the one GPU →
//! CPU fallback ([`or_else_on_cpu`]), and what the solver is handed instead of a device
//! ([`Backends`]). Adding a backend means a variant here and its arms in this file's
//! `impl Device` blocks.

use super::cpu;
#[cfg(feature = "gpu")]
use super::gpu;
use super::{CpuConfig, Local, sampled};
use crate::error::Result;

/// What a solver opens its backends with. Training hands the solver one (a [`Device`] is one),
/// so the solver never chooses where it runs: a round's or a subsample's backends come from
/// [`on_rows`](Self::on_rows) and [`on_subsample`](Self::on_subsample).
pub trait Backends {
    /// A backend for `prob`, taking over what another backend of these exported
    /// ([`crate::backend::Columns::export_columns`]).
    fn open<'a>(
        &'a self,
        prob: &'a crate::problem::Problem<'a>,
        cpu: CpuConfig,
        carried: Option<crate::backend::ColumnExport>,
    ) -> Result<Box<dyn Local + 'a>>;

    /// These backends for the problem made of rows `rows` (ascending) of the current one (a
    /// working-set round's).
    fn on_rows(&self, rows: &[usize]) -> Box<dyn Backends + '_>;

    /// [`on_rows`](Self::on_rows) for a subsample solved on its own (a warm start's), `sub`
    /// its rows: a subsample too small for a GPU to pay (the rule of `--backend auto`) runs on
    /// the CPU, where it is several times faster.
    fn on_subsample(&self, rows: &[usize], sub: &crate::data::Dataset) -> Box<dyn Backends + '_>;
}

impl Backends for Device {
    fn open<'a>(
        &'a self,
        prob: &'a crate::problem::Problem<'a>,
        cpu: CpuConfig,
        carried: Option<crate::backend::ColumnExport>,
    ) -> Result<Box<dyn Local + 'a>> {
        self.backend_reusing(prob, cpu, carried)
    }

    fn on_rows(&self, rows: &[usize]) -> Box<dyn Backends + '_> {
        Box::new(self.restrict(rows))
    }

    fn on_subsample(&self, rows: &[usize], sub: &crate::data::Dataset) -> Box<dyn Backends + '_> {
        if self.is_gpu() && super::column_pass_bytes(sub) < super::AUTO_GPU_MIN_BYTES {
            Box::new(Device::Cpu)
        } else {
            Box::new(self.restrict(rows))
        }
    }
}

/// Where training runs: what `--backend` resolved to.
#[derive(Debug, Clone, Default)]
pub enum Device {
    /// The CPU backend.
    #[default]
    Cpu,
    /// The wgpu backend on an open device; with `fallback`, a problem the device cannot hold
    /// runs on the CPU instead (after saying so) rather than failing (`--backend auto`).
    #[cfg(feature = "gpu")]
    Gpu {
        /// The device.
        ctx: std::sync::Arc<gpu::GpuContext>,
        /// Settings.
        cfg: gpu::GpuConfig,
        /// Fall back to the CPU when the problem does not fit.
        fallback: bool,
        /// Data already on the device (see [`Device::share`]): backends bind it instead of
        /// uploading their problem's rows.
        shared: Option<SharedRows>,
    },
}

/// A dataset uploaded once ([`Device::share`]) and the rows of it the current data are
/// ([`Device::restrict`]).
#[cfg(feature = "gpu")]
#[derive(Debug, Clone)]
pub struct SharedRows {
    /// The uploaded dataset.
    pub data: std::sync::Arc<gpu::GpuData>,
    /// The rows of `data` that the current dataset holds, ascending (None: all of them).
    pub rows: Option<std::sync::Arc<Vec<usize>>>,
}

#[cfg(feature = "gpu")]
impl SharedRows {
    /// The (data, rows) view that GPU backends and prediction bind.
    pub fn view(&self) -> (&std::sync::Arc<gpu::GpuData>, Option<&[usize]>) {
        (&self.data, self.rows.as_ref().map(|r| r.as_slice()))
    }
}

impl Device {
    /// This device with `ds` uploaded once: backends on `ds` — or, after
    /// [`Device::restrict`], on subsets of its rows (cross-validation folds, one-versus-one
    /// pairs) — bind the uploaded rows instead of uploading their own. The CPU is unchanged.
    /// With `fallback` (`--backend auto`) data the device cannot hold leave it unshared.
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut, unused_variables))]
    pub fn share(&self, ds: &crate::data::Dataset) -> Result<Device> {
        match self {
            Device::Cpu => Ok(Device::Cpu),
            #[cfg(feature = "gpu")]
            Device::Gpu {
                ctx, cfg, fallback, ..
            } => match gpu::GpuData::upload(ds, ctx, cfg.max_chunk_bytes) {
                Ok(data) => Ok(Device::Gpu {
                    ctx: ctx.clone(),
                    cfg: *cfg,
                    fallback: *fallback,
                    shared: Some(SharedRows {
                        data: std::sync::Arc::new(data),
                        rows: None,
                    }),
                }),
                Err(e) => {
                    or_else_on_cpu(*fallback, e, "each training uploads its own data", || {
                        self.clone()
                    })
                }
            },
        }
    }

    /// [`Device::share`] unless the device already shares all of a dataset of `ds`'s shape
    /// (then itself: the caller shared `ds` before, as `fwsvm grid` does).
    pub fn share_once(&self, ds: &crate::data::Dataset) -> Result<Device> {
        match self {
            #[cfg(feature = "gpu")]
            Device::Gpu {
                shared: Some(sh), ..
            } if sh.rows.is_none()
                && sh.data.len() == ds.len()
                && sh.data.d == ds.n_features().max(1)
                && sh.data.dense == ds.is_dense() =>
            {
                Ok(self.clone())
            }
            _ => self.share(ds),
        }
    }

    /// This device with the gradient (GPU) in precision `p` where the adapter supports it;
    /// the CPU is unchanged (its precision is a training parameter).
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut, unused_variables))]
    pub fn with_precision(&self, p: cpu::Precision) -> Device {
        let mut d = self.clone();
        #[cfg(feature = "gpu")]
        if let Device::Gpu { ctx, cfg, .. } = &mut d
            && (p == cpu::Precision::F32 || ctx.f64)
        {
            cfg.precision = p;
        }
        d
    }

    /// True for a GPU device.
    pub fn is_gpu(&self) -> bool {
        !matches!(self, Device::Cpu)
    }

    /// True when problems this device cannot take run on the CPU instead (`--backend auto`).
    pub fn falls_back(&self) -> bool {
        match self {
            #[cfg(feature = "gpu")]
            Device::Gpu { fallback, .. } => *fallback,
            _ => false,
        }
    }

    /// True when backends on this device bind data uploaded once.
    pub fn is_shared(&self) -> bool {
        match self {
            #[cfg(feature = "gpu")]
            Device::Gpu { shared, .. } => shared.is_some(),
            _ => false,
        }
    }

    /// This device for the dataset made of rows `rows` (ascending) of the current one
    /// (`Dataset::subset(rows)`): a shared upload is kept, its row map composed.
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut, unused_variables))]
    pub fn restrict(&self, rows: &[usize]) -> Device {
        let mut d = self.clone();
        #[cfg(feature = "gpu")]
        if let Device::Gpu {
            shared: Some(sh), ..
        } = &mut d
        {
            let composed: Vec<usize> = match &sh.rows {
                Some(old) => rows.iter().map(|&r| old[r]).collect(),
                None => rows.to_vec(),
            };
            sh.rows = Some(std::sync::Arc::new(composed));
        }
        d
    }
}

impl Device {
    /// Short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Device::Cpu => "cpu".into(),
            #[cfg(feature = "gpu")]
            Device::Gpu { ctx, .. } => {
                format!("gpu: {} ({})", ctx.adapter.name, ctx.adapter.backend)
            }
        }
    }

    /// A backend for the problem on this device.
    pub fn backend<'a>(
        &'a self,
        prob: &'a crate::problem::Problem<'a>,
        cpu: CpuConfig,
    ) -> Result<Box<dyn Local + 'a>> {
        self.backend_reusing(prob, cpu, None)
    }

    /// [`Device::backend`] taking over what another backend of this device exported
    /// ([`crate::backend::Columns::export_columns`]: columns, or only the cache's memory).
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut))]
    pub fn backend_reusing<'a>(
        &'a self,
        prob: &'a crate::problem::Problem<'a>,
        cpu: CpuConfig,
        carried: Option<crate::backend::ColumnExport>,
    ) -> Result<Box<dyn Local + 'a>> {
        match self {
            Device::Cpu => {
                let mut be = cpu::cpu_backend(prob, cpu);
                if let Some(c) = carried {
                    be.adopt_columns(c);
                }
                Ok(be)
            }
            #[cfg(feature = "gpu")]
            Device::Gpu {
                ctx,
                cfg,
                fallback,
                shared,
            } => match gpu::GpuBackend::with_data_reusing(
                prob,
                ctx,
                *cfg,
                shared.as_ref().map(SharedRows::view),
                carried,
            ) {
                Ok(b) => Ok(Box::new(b)),
                Err(e) => or_else_on_cpu(*fallback, e, "training on the CPU", || {
                    cpu::cpu_backend(prob, cpu)
                }),
            },
        }
    }
}

impl Device {
    /// The engine of the sampled iterations' kernel blocks on this device (with `fallback`,
    /// the CPU's when the device cannot serve the problem, after saying so).
    pub fn blocks<'a>(
        &'a self,
        prob: &'a crate::problem::Problem<'a>,
    ) -> Result<Box<dyn sampled::BlockEngine + 'a>> {
        match self {
            Device::Cpu => Ok(Box::new(sampled::CpuBlocks::new(prob))),
            #[cfg(feature = "gpu")]
            Device::Gpu {
                ctx, cfg, fallback, ..
            } => match gpu::block::GpuBlocks::new(prob, ctx, *cfg) {
                Ok(b) => Ok(Box::new(b)),
                Err(e) => or_else_on_cpu(
                    *fallback,
                    e,
                    "computing the sampled blocks on the CPU",
                    || -> Box<dyn sampled::BlockEngine + 'a> {
                        Box::new(sampled::CpuBlocks::new(prob))
                    },
                ),
            },
        }
    }
}

/// The one GPU → CPU fallback: a device chosen by `--backend auto` (`fallback`) that fails
/// with a [`crate::Error::Backend`] (it cannot hold or serve the problem) says so, with what
/// happens `instead`, and the caller goes on with `on_cpu`; any other error, or any error on
/// a device the user named, is returned.
pub fn or_else_on_cpu<T>(
    fallback: bool,
    err: crate::Error,
    instead: &str,
    on_cpu: impl FnOnce() -> T,
) -> Result<T> {
    match err {
        crate::Error::Backend(msg) if fallback => {
            eprintln!("fwsvm: {msg}; {instead} instead");
            Ok(on_cpu())
        }
        e => Err(e),
    }
}
