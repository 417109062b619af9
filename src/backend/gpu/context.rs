//! One long-lived wgpu device per process: adapter discovery and choice (`WGPU_BACKEND`,
//! `WGPU_ADAPTER_NAME`, `--device`), the device with the adapter's own limits, device errors
//! turned into [`Error::Backend`] instead of panics, and the compiled pipelines.

use super::pipelines::Pipelines;
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex, OnceLock};

/// What `fwsvm info` shows of one adapter.
#[derive(Debug, Clone)]
pub struct AdapterSummary {
    /// Position in the enumeration (what `--device <index>` takes).
    pub index: usize,
    /// Adapter name.
    pub name: String,
    /// Vulkan, Gl, Metal, Dx12.
    pub backend: String,
    /// DiscreteGpu, IntegratedGpu, VirtualGpu, Cpu (a software rasterizer), Other.
    pub device_type: wgpu::DeviceType,
    /// Driver and its version.
    pub driver: String,
    /// SHADER_F64 available (needed by `--precision f64`).
    pub f64: bool,
    /// Largest storage-buffer binding in bytes.
    pub max_binding: u64,
    /// Largest buffer in bytes.
    pub max_buffer: u64,
}

impl AdapterSummary {
    /// A hardware adapter (not a CPU rasterizer).
    pub fn is_hardware(&self) -> bool {
        matches!(
            self.device_type,
            wgpu::DeviceType::DiscreteGpu
                | wgpu::DeviceType::IntegratedGpu
                | wgpu::DeviceType::VirtualGpu
        )
    }
}

/// Which adapter to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The best hardware adapter; none if there is only a software one (`--backend auto`).
    Hardware,
    /// The best adapter of any kind, software included (`--backend gpu`).
    Any,
    /// `--device <index>`.
    Index(usize),
    /// `--device <name>`: the first adapter whose name contains it (case-insensitive).
    Name(String),
    /// One of several processes on a machine (an MPI rank's local rank `k`): the `k`-th,
    /// modulo their number, of the adapters that can run the job — those with SHADER_F64
    /// where `f64` is asked; hardware ones where there are any, else software ones; Vulkan
    /// ones where there are any (one card listed under Vulkan and GL counts once) — best
    /// first, as [`best`] orders them. Ranks beyond the adapters share them.
    Share {
        /// The process's rank on its machine.
        k: usize,
        /// The job needs SHADER_F64.
        f64: bool,
    },
}

impl DeviceSelector {
    /// Parses `--device` (an index or a name), falling back to `WGPU_ADAPTER_NAME`, then to
    /// `default`.
    pub fn from_arg(arg: Option<&str>, default: DeviceSelector) -> DeviceSelector {
        match arg {
            Some(s) => match s.parse::<usize>() {
                Ok(i) => DeviceSelector::Index(i),
                Err(_) => DeviceSelector::Name(s.to_string()),
            },
            None => match std::env::var("WGPU_ADAPTER_NAME") {
                Ok(n) if !n.is_empty() => DeviceSelector::Name(n),
                _ => default,
            },
        }
    }
}

fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

fn enumerate(only: Option<wgpu::Backends>) -> Vec<wgpu::Adapter> {
    let inst = instance();
    let backends =
        only.unwrap_or_else(|| wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all()));
    pollster::block_on(inst.enumerate_adapters(backends))
}

fn summary(index: usize, a: &wgpu::Adapter) -> AdapterSummary {
    let info = a.get_info();
    let limits = a.limits();
    AdapterSummary {
        index,
        name: info.name.clone(),
        backend: format!("{:?}", info.backend),
        device_type: info.device_type,
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
        f64: a.features().contains(wgpu::Features::SHADER_F64),
        max_binding: limits.max_storage_buffer_binding_size,
        max_buffer: limits.max_buffer_size,
    }
}

/// All adapters wgpu finds (honouring `WGPU_BACKEND`).
pub fn list_adapters() -> Vec<AdapterSummary> {
    enumerate(None)
        .iter()
        .enumerate()
        .map(|(i, a)| summary(i, a))
        .collect()
}

fn rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// The adapter `--backend auto` (`software` = false) or `--backend gpu` would pick: discrete
/// before integrated before virtual before software, Vulkan first, then enumeration order.
pub fn best(list: &[AdapterSummary], software: bool) -> Option<usize> {
    list.iter()
        .filter(|s| software || s.is_hardware())
        .min_by_key(|s| (rank(s.device_type), s.backend != "Vulkan", s.index))
        .map(|s| s.index)
}

/// The adapter [`DeviceSelector::Share`] picks for local rank `k`.
pub fn shared(list: &[AdapterSummary], k: usize, f64: bool) -> Option<usize> {
    let able: Vec<&AdapterSummary> = list.iter().filter(|s| s.f64 || !f64).collect();
    let hardware = able.iter().any(|s| s.is_hardware());
    let mut pool: Vec<&AdapterSummary> = able
        .into_iter()
        .filter(|s| s.is_hardware() == hardware)
        .collect();
    if pool.iter().any(|s| s.backend == "Vulkan") {
        pool.retain(|s| s.backend == "Vulkan");
    }
    pool.sort_by_key(|s| (rank(s.device_type), s.index));
    (!pool.is_empty()).then(|| pool[k % pool.len()].index)
}

/// An open device and everything built on it once.
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter it was opened on.
    pub adapter: AdapterSummary,
    /// Limits granted (the adapter's own).
    pub limits: wgpu::Limits,
    /// SHADER_F64 enabled.
    pub f64: bool,
    errors: Arc<Mutex<Vec<String>>>,
    pipes: [OnceLock<std::result::Result<Arc<Pipelines>, String>>; 2],
    /// The device loop's pipelines by (f64, dense): index 2·wide + dense.
    resident: [OnceLock<std::result::Result<Arc<super::resident::ResidentPipes>, String>>; 4],
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter)
            .finish()
    }
}

impl GpuContext {
    /// Opens the selected adapter. `Ok(None)` when the selector finds none (no driver, or only
    /// a software adapter under [`DeviceSelector::Hardware`]); an error when it names one that
    /// does not exist or the device cannot be opened.
    pub fn open(sel: &DeviceSelector) -> Result<Option<GpuContext>> {
        Self::open_on(sel, None)
    }

    /// As [`open`](Self::open), restricted to some wgpu backends (e.g. `Backends::GL`) instead
    /// of `WGPU_BACKEND`.
    pub fn open_on(
        sel: &DeviceSelector,
        only: Option<wgpu::Backends>,
    ) -> Result<Option<GpuContext>> {
        let adapters = enumerate(only);
        let sums: Vec<AdapterSummary> = adapters
            .iter()
            .enumerate()
            .map(|(i, a)| summary(i, a))
            .collect();
        let names = || {
            if sums.is_empty() {
                "none found".to_string()
            } else {
                sums.iter()
                    .map(|s| format!("{}: {} ({})", s.index, s.name, s.backend))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let pick = match sel {
            DeviceSelector::Index(i) => match sums.get(*i) {
                Some(s) => Some(s.index),
                None => {
                    return Err(Error::param(format!(
                        "device {i}: no such adapter (adapters: {})",
                        names()
                    )));
                }
            },
            DeviceSelector::Name(n) => {
                let low = n.to_lowercase();
                match sums.iter().find(|s| s.name.to_lowercase().contains(&low)) {
                    Some(s) => Some(s.index),
                    None => {
                        return Err(Error::param(format!(
                            "no adapter named like {n:?} (adapters: {})",
                            names()
                        )));
                    }
                }
            }
            DeviceSelector::Hardware => best(&sums, false),
            DeviceSelector::Any => best(&sums, true),
            DeviceSelector::Share { k, f64 } => shared(&sums, *k, *f64),
        };
        let Some(k) = pick else {
            return Ok(None);
        };
        let adapter = &adapters[k];
        let f64 = sums[k].f64;
        let mut features = wgpu::Features::empty();
        if f64 {
            features |= wgpu::Features::SHADER_F64;
        }
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("fwsvm"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| Error::Backend(format!("cannot open {}: {e}", sums[k].name)))?;
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(e.to_string());
        }));
        Ok(Some(GpuContext {
            device,
            queue,
            adapter: sums[k].clone(),
            limits,
            f64,
            errors,
            pipes: [OnceLock::new(), OnceLock::new()],
            resident: Default::default(),
        }))
    }

    /// A software adapter (lavapipe, llvmpipe): wants few, long-running workgroups.
    pub fn is_software(&self) -> bool {
        !self.adapter.is_hardware()
    }

    /// Device-memory bandwidth in bytes/s, measured as buffer-to-buffer copies of up to
    /// `bytes` (each copy reads and writes them, counted twice); best of `reps` submits of
    /// four copies, each timed until the device is idle.
    pub fn copy_bandwidth(&self, bytes: u64, reps: usize) -> Result<f64> {
        let bytes = bytes
            .min(self.limits.max_buffer_size)
            .max(1 << 20)
            .next_multiple_of(4);
        let mk = |usage| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bandwidth"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        let src = mk(wgpu::BufferUsages::COPY_SRC);
        let dst = mk(wgpu::BufferUsages::COPY_DST);
        let mut best = f64::INFINITY;
        for r in 0..reps.max(1) + 1 {
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            for _ in 0..4 {
                enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
            }
            let t = std::time::Instant::now();
            self.queue.submit([enc.finish()]);
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| Error::Backend(format!("{}: {e}", self.adapter.name)))?;
            self.check("bandwidth copy")?;
            if r > 0 {
                // The first submit is a warm-up.
                best = best.min(t.elapsed().as_secs_f64());
            }
        }
        Ok(8.0 * bytes as f64 / best)
    }

    /// Fails with the first device error recorded since the last call.
    pub fn check(&self, what: &str) -> Result<()> {
        let mut e = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if e.is_empty() {
            Ok(())
        } else {
            let msg = e.join("; ");
            e.clear();
            Err(Error::Backend(format!(
                "{} on {}: {msg}",
                what, self.adapter.name
            )))
        }
    }

    /// The compiled pipelines for the gradient type (f32, or f64 when `wide`).
    pub fn pipelines(&self, wide: bool) -> Result<Arc<Pipelines>> {
        if wide && !self.f64 {
            return Err(Error::param(format!(
                "precision f64 on the GPU needs SHADER_F64, which {} ({}) does not have; use precision f32 or the CPU backend",
                self.adapter.name, self.adapter.backend
            )));
        }
        self.pipes[wide as usize]
            .get_or_init(|| {
                // The layouts' errors here, the pipelines' on their threads.
                let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
                let p = Pipelines::new(&self.device, wide);
                match pollster::block_on(scope.pop()) {
                    Some(e) => Err(e.to_string()),
                    None => p.map(Arc::new),
                }
            })
            .clone()
            .map_err(|e| Error::Backend(format!("shader pipelines on {}: {e}", self.adapter.name)))
    }
}

impl GpuContext {
    /// The device loop's pipelines (shaders/resident.wgsl) for the gradient type and the data
    /// layout, compiled on first use.
    pub(super) fn resident_pipelines(
        &self,
        wide: bool,
        dense: bool,
    ) -> Result<Arc<super::resident::ResidentPipes>> {
        let pipes = self.pipelines(wide)?;
        self.resident[2 * wide as usize + dense as usize]
            .get_or_init(|| {
                let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
                let p = super::resident::ResidentPipes::new(&self.device, wide, dense, &pipes);
                match pollster::block_on(scope.pop()) {
                    Some(e) => Err(e.to_string()),
                    None => p.map(Arc::new),
                }
            })
            .clone()
            .map_err(|e| Error::Backend(format!("device loop on {}: {e}", self.adapter.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::{AdapterSummary, shared};
    use wgpu::DeviceType;

    fn adapter(index: usize, backend: &str, t: DeviceType, f64: bool) -> AdapterSummary {
        AdapterSummary {
            index,
            name: format!("a{index}"),
            backend: backend.into(),
            device_type: t,
            driver: String::new(),
            f64,
            max_binding: 1 << 27,
            max_buffer: 1 << 31,
        }
    }

    #[test]
    fn ranks_share_the_adapters_that_can_run_the_job() {
        // lavapipe as wgpu lists it: Vulkan with f64, GL without.
        let soft = [
            adapter(0, "Vulkan", DeviceType::Cpu, true),
            adapter(1, "Gl", DeviceType::Cpu, false),
        ];
        for k in 0..4 {
            assert_eq!(shared(&soft, k, true), Some(0));
            assert_eq!(
                shared(&soft, k, false),
                Some(0),
                "one card under two APIs counts once"
            );
        }
        // Two cards and a software adapter: hardware only, round robin, best first.
        let two = [
            adapter(0, "Vulkan", DeviceType::Cpu, true),
            adapter(1, "Vulkan", DeviceType::IntegratedGpu, true),
            adapter(2, "Vulkan", DeviceType::DiscreteGpu, true),
            adapter(3, "Gl", DeviceType::DiscreteGpu, false),
        ];
        let picks: Vec<_> = (0..4).map(|k| shared(&two, k, false).unwrap()).collect();
        assert_eq!(picks, [2, 1, 2, 1]);
        // f64 asked and no card has it: none (the caller says why).
        let no64 = [adapter(0, "Gl", DeviceType::DiscreteGpu, false)];
        assert_eq!(shared(&no64, 0, true), None);
        assert_eq!(shared(&[], 0, false), None);
    }
}
