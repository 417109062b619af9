//! Choosing where training runs, as public API: a [`DeviceRequest`] says what the caller
//! asks for (the CLI's `--backend`, `--device`, `--precision`, `--cache-mb`; the Python
//! package's `backend`, `device`, `precision`, `cache_size`) and [`DeviceRequest::open`]
//! resolves it to a [`Device`], reporting each choice it makes on the caller's behalf (a
//! fallback to the CPU, an adapter without f64) through a `notes` callback instead of
//! printing, so a library or notebook user decides where such lines go.
//!
//! ```
//! use fwsvm::backend::{BackendChoice, DeviceRequest};
//!
//! // The CPU, without probing adapters.
//! let req = DeviceRequest { backend: BackendChoice::Cpu, ..Default::default() };
//! let device = req.open(&mut |_| {}).unwrap();
//! assert_eq!(device.describe(), "cpu");
//! ```

use super::Device;
use super::cpu::Precision;
use crate::data::Dataset;
use crate::error::{Error, Result};

/// Which backend a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendChoice {
    /// A hardware GPU when there is one, else the CPU.
    #[default]
    Auto,
    /// A GPU adapter of any kind (software ones included); an error when there is none.
    Gpu,
    /// The multi-threaded CPU backend.
    Cpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "gpu" => Ok(BackendChoice::Gpu),
            "cpu" => Ok(BackendChoice::Cpu),
            _ => Err(format!("backend must be 'auto', 'gpu' or 'cpu', got {s:?}")),
        }
    }
}

/// What a caller asks of the device; [`open`](Self::open) resolves it.
#[derive(Debug, Clone)]
pub struct DeviceRequest {
    /// Which backend.
    pub backend: BackendChoice,
    /// An adapter by index or by (part of its) name, as `fwsvm info` lists them; None: the
    /// `WGPU_ADAPTER_NAME` environment variable, else the best adapter the choice allows.
    pub device: Option<String>,
    /// The gradient's precision as the caller demands it; None: `default_precision`, which an
    /// adapter without SHADER_F64 may lower to f32 (a demanded f64 never is).
    pub precision: Option<Precision>,
    /// The precision when none is demanded (the algorithm's default: f64 for SimpleSVM).
    pub default_precision: Precision,
    /// GPU column-cache bytes (the CPU's cache is a training parameter); None: the adapter's
    /// default ([`gpu_cache_default`](super::gpu::gpu_cache_default)).
    pub cache_bytes: Option<usize>,
    /// This process's rank among the processes on its machine (an MPI job's local rank): with
    /// [`BackendChoice::Gpu`] and no adapter named, the adapter
    /// [`DeviceSelector::Share`](super::gpu::DeviceSelector::Share) picks for it.
    pub local_rank: Option<usize>,
    /// Where the working-set solver's outer iterations run on a GPU (`--gpu-loop`).
    pub loop_place: super::LoopPlace,
}

impl Default for DeviceRequest {
    fn default() -> Self {
        DeviceRequest {
            backend: BackendChoice::Auto,
            device: None,
            precision: None,
            default_precision: Precision::F32,
            cache_bytes: None,
            local_rank: None,
            loop_place: super::LoopPlace::Auto,
        }
    }
}

impl DeviceRequest {
    /// This request with the working-set loop's place on a GPU.
    pub fn with_loop(self, loop_place: super::LoopPlace) -> Self {
        DeviceRequest { loop_place, ..self }
    }

    /// The precision training will ask of the device.
    pub fn precision(&self) -> Precision {
        self.precision.unwrap_or(self.default_precision)
    }

    /// Opens the device asked for. With [`BackendChoice::Auto`] a machine without a hardware
    /// adapter (or with one that lacks what a demanded f64 needs) gets the CPU, and `notes`
    /// hears why; with [`BackendChoice::Gpu`] that is an error.
    #[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
    pub fn open(&self, notes: &mut dyn FnMut(&str)) -> Result<Device> {
        let arg = self.backend;
        if arg == BackendChoice::Cpu {
            return Ok(Device::Cpu);
        }
        #[cfg(feature = "gpu")]
        {
            use super::gpu::{DeviceSelector, GpuConfig, GpuContext};
            let default = match (arg, self.local_rank) {
                (BackendChoice::Auto, _) => DeviceSelector::Hardware,
                (_, Some(k)) => DeviceSelector::Share {
                    k,
                    f64: self.precision == Some(Precision::F64),
                },
                (_, None) => DeviceSelector::Any,
            };
            let sel = DeviceSelector::from_arg(self.device.as_deref(), default);
            let opened = match GpuContext::open(&sel) {
                Ok(c) => c,
                Err(e) if arg == BackendChoice::Auto && self.device.is_none() => {
                    notes(&format!("{e}; using the CPU backend"));
                    None
                }
                Err(e) => return Err(e),
            };
            let Some(ctx) = opened else {
                if arg == BackendChoice::Auto {
                    notes(
                        "no hardware GPU adapter found (`fwsvm info` lists adapters); using \
                         the CPU backend",
                    );
                    return Ok(Device::Cpu);
                }
                return Err(Error::param(
                    "backend gpu: no GPU adapter found (install a Vulkan driver, e.g. \
                     Debian's mesa-vulkan-drivers for the software one; `fwsvm info` lists \
                     adapters)"
                        .into(),
                ));
            };
            let mut precision = self.precision();
            if precision == Precision::F64 && !ctx.f64 {
                if self.precision.is_none() {
                    // An algorithm's default, not the caller's demand: f32 on this adapter.
                    notes(&format!(
                        "{} has no SHADER_F64; the gradient is f32 (precision f32)",
                        ctx.adapter.name
                    ));
                    precision = Precision::F32;
                } else if arg == BackendChoice::Auto {
                    notes(&format!(
                        "{} has no SHADER_F64 for precision f64; using the CPU backend",
                        ctx.adapter.name
                    ));
                    return Ok(Device::Cpu);
                } else {
                    // Fails with the adapter's own message.
                    ctx.pipelines(true)?;
                }
            }
            let cache_bytes = self
                .cache_bytes
                .unwrap_or_else(|| super::gpu::gpu_cache_default(&ctx));
            Ok(Device::Gpu {
                ctx: std::sync::Arc::new(ctx),
                cfg: GpuConfig {
                    cache_bytes,
                    precision,
                    loop_place: self.loop_place,
                    ..GpuConfig::default()
                },
                fallback: arg == BackendChoice::Auto,
                shared: None,
            })
        }
        #[cfg(not(feature = "gpu"))]
        {
            if arg == BackendChoice::Gpu {
                return Err(Error::param(
                    "backend gpu: this fwsvm was built without the `gpu` feature".into(),
                ));
            }
            notes("built without the `gpu` feature; using the CPU backend");
            Ok(Device::Cpu)
        }
    }

    /// [`open`](Self::open) for training on `ds`: with [`BackendChoice::Auto`] and no
    /// adapter named, data too small for a GPU to pay (one kernel-column pass under
    /// [`super::AUTO_GPU_MIN_BYTES`]) stay on the CPU without probing adapters, and `notes`
    /// says so.
    pub fn open_for(&self, ds: &Dataset, notes: &mut dyn FnMut(&str)) -> Result<Device> {
        let bytes = super::column_pass_bytes(ds);
        if self.backend == BackendChoice::Auto
            && self.device.is_none()
            && bytes < super::AUTO_GPU_MIN_BYTES
        {
            let size = if bytes >= 1 << 20 {
                format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
            } else {
                format!("{} KiB", bytes.div_ceil(1024))
            };
            notes(&format!(
                "backend auto: {} rows × {} features ({size} per kernel column pass) train \
                 on the CPU: below {} MiB a GPU's round trips (three or four per iteration, \
                 about 100 µs each on an H100) and their host work cost more than the CPU's \
                 iteration (backend gpu to insist)",
                ds.len(),
                ds.n_features(),
                super::AUTO_GPU_MIN_BYTES >> 20
            ));
            return Ok(Device::Cpu);
        }
        self.open(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_parse_and_unknown_ones_are_refused() {
        assert_eq!("auto".parse::<BackendChoice>(), Ok(BackendChoice::Auto));
        assert_eq!("GPU".parse::<BackendChoice>(), Ok(BackendChoice::Gpu));
        assert_eq!("cpu".parse::<BackendChoice>(), Ok(BackendChoice::Cpu));
        let e = "cuda".parse::<BackendChoice>().unwrap_err();
        assert!(e.contains("cuda") && e.contains("'auto'"), "{e}");
    }

    #[test]
    fn small_data_stay_on_the_cpu_under_auto_and_say_why() {
        let ds = Dataset::from_csr(
            2,
            vec![0, 1, 2],
            vec![0, 1],
            vec![1.0, 2.0],
            vec![1.0, -1.0],
        );
        let mut said = Vec::new();
        let dev = DeviceRequest::default()
            .open_for(&ds, &mut |s| said.push(s.to_string()))
            .unwrap();
        assert!(matches!(dev, Device::Cpu));
        assert_eq!(said.len(), 1);
        assert!(said[0].contains("2 rows × 2 features"), "{}", said[0]);
        // The CPU asked for by name: no note.
        said.clear();
        let req = DeviceRequest {
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        assert!(matches!(
            req.open(&mut |s| said.push(s.into())).unwrap(),
            Device::Cpu
        ));
        assert!(said.is_empty());
    }
}
