//! The sampled iterations' kernel blocks on the device (docs/METHODS.md; Frandi, Ñanculef,
//! Suykens, *A PARTAN-Accelerated Frank-Wolfe Algorithm for Large-Scale SVM Classification*,
//! 2015, §4.2): a [`BlockEngine`] running `shaders/block.wgsl`.
//!
//! The rows a block touches — the draw's |S| rows, the tracked set T and the support of α —
//! are kept resident on the device as dense f32 rows in one buffer of slots, managed on the
//! host with a clock over "used in this call" stamps: the support and T stay resident from
//! one iteration to the next, so an iteration uploads only its |S| new sample rows (coalesced
//! into one write per run of consecutive slots) and its index and weight lists. All jobs of
//! one [`BlockEngine::run`] are one submit and one readback of |S| + |T| values. The slot
//! buffer grows by doubling up to the storage-binding limit; a block needing more distinct
//! rows than that fails with a message naming the CPU backend.

use super::passes::read_back;
use super::{GpuConfig, GpuContext, bind_group};
use crate::backend::cpu::Precision;
use crate::backend::sampled::{BlockEngine, BlockJob, CpuBlocks};
use crate::data::Row;
use crate::error::{Error, Result};
use crate::problem::Problem;
use std::sync::Arc;
use std::sync::atomic::AtomicU8;
use wgpu::util::DeviceExt;

use super::pipelines::{Pipelines, kernel_params, split};

/// shaders/block.wgsl's `Job`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Job {
    nrows: u32,
    nw: u32,
    row_off: u32,
    w_off: u32,
    out_off: u32,
    dpad: u32,
    d: u32,
    kind: u32,
    degree: u32,
    nx: u32,
    pad0: u32,
    pad1: u32,
    gamma: [f32; 2],
    coef0: [f32; 2],
    inv_c: [f32; 2],
    inv_c_neg: [f32; 2],
}

/// Jobs with at most this many weights run one invocation per row (a step's columns);
/// larger ones one workgroup per row (a draw's |S| × |A| block).
const THREAD_MAX_W: usize = 16;
const NONE: u32 = u32::MAX;
const MAX_X: u64 = 65535;

/// A storage buffer that grows (and is then rebound).
struct Grow {
    buf: wgpu::Buffer,
    usage: wgpu::BufferUsages,
    label: &'static str,
}

impl Grow {
    fn new(dev: &wgpu::Device, label: &'static str, bytes: u64, usage: wgpu::BufferUsages) -> Self {
        Grow {
            buf: dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(256).next_multiple_of(256),
                usage,
                mapped_at_creation: false,
            }),
            usage,
            label,
        }
    }

    /// Makes room for `bytes`; true when the buffer was replaced.
    fn ensure(&mut self, dev: &wgpu::Device, bytes: u64) -> bool {
        if bytes <= self.buf.size() {
            return false;
        }
        *self = Grow::new(
            dev,
            self.label,
            (2 * bytes).max(self.buf.size()),
            self.usage,
        );
        true
    }
}

/// Kernel blocks on a wgpu device.
pub struct GpuBlocks<'a> {
    prob: &'a Problem<'a>,
    ctx: &'a GpuContext,
    pipes: Arc<Pipelines>,
    wide: bool,
    gt: u64,
    d: usize,
    dpad: usize,
    base: Job,
    /// Slots the binding limit allows.
    max_slots: usize,
    cap: usize,
    slot_of: Vec<u32>,
    owner: Vec<u32>,
    stamp: Vec<u64>,
    epoch: u64,
    hand: usize,
    xs: wgpu::Buffer,
    ylab: wgpu::Buffer,
    rl: Grow,
    wl: Grow,
    wv: Grow,
    out: Grow,
    staging: Grow,
    params: Grow,
    param_stride: u64,
    bind: Option<wgpu::BindGroup>,
    uploads: Vec<(u32, u32)>,
    up_host: Vec<f32>,
    rl_host: Vec<u32>,
    wl_host: Vec<u32>,
    wv_host: Vec<u8>,
    jobs_host: Vec<Job>,
    /// Scratch (reused every call): one job's weights, the Job blocks' bytes.
    ws: Vec<(usize, f64)>,
    param_bytes: Vec<u8>,
    readback: Vec<u8>,
    map_state: Arc<AtomicU8>,
    /// Rows uploaded so far (for tests and messages).
    uploaded_rows: u64,
    /// For a call whose rows do not fit the largest slot buffer.
    cpu: CpuBlocks<'a>,
    cpu_calls: u64,
}

impl<'a> GpuBlocks<'a> {
    /// The jobs' row and weight lists (rows with their slots, weights with y) and one Job
    /// block each, on the host.
    fn fill_job_lists(&mut self, jobs: &[BlockJob<'_>]) {
        self.rl_host.clear();
        self.wl_host.clear();
        self.wv_host.clear();
        self.jobs_host.clear();
        let mut out_off = 0u32;
        for job in jobs.iter() {
            let row_off = (self.rl_host.len() / 2) as u32;
            for &i in job.rows {
                self.rl_host.push(i as u32);
                self.rl_host.push(self.slot_of[i]);
            }
            let w_off = (self.wl_host.len() / 2) as u32;
            let mut ws = std::mem::take(&mut self.ws);
            ws.clear();
            job.weights.for_each(|j, w| ws.push((j, w)));
            for &(j, w) in &ws {
                self.wl_host.push(j as u32);
                self.wl_host.push(self.slot_of[j]);
                self.push_gt(w * self.prob.y[j]);
            }
            let nw = ws.len();
            self.ws = ws;
            let n = job.rows.len() as u64;
            let per_row = nw > THREAD_MAX_W;
            let groups = if per_row { n } else { n.div_ceil(256) };
            self.jobs_host.push(Job {
                nrows: n as u32,
                nw: nw as u32,
                row_off,
                w_off,
                out_off,
                nx: groups.clamp(1, MAX_X) as u32,
                ..self.base
            });
            out_off += n as u32;
        }
    }

    /// Grows the device buffers to the jobs' lists and outputs, binding them anew when one
    /// was replaced.
    fn ensure_buffers(&mut self, njobs: usize, total_rows: usize) {
        let dev = &self.ctx.device;
        let gt = self.gt;
        let mut rebind = self.bind.is_none();
        rebind |= self.rl.ensure(dev, self.rl_host.len() as u64 * 4);
        rebind |= self.wl.ensure(dev, (self.wl_host.len() as u64 * 4).max(8));
        rebind |= self.wv.ensure(dev, (self.wv_host.len() as u64).max(gt));
        rebind |= self.out.ensure(dev, total_rows as u64 * gt);
        self.staging.ensure(dev, total_rows as u64 * gt);
        rebind |= self.params.ensure(dev, njobs as u64 * self.param_stride);
        if rebind {
            let params = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.params.buf,
                offset: 0,
                size: wgpu::BufferSize::new(std::mem::size_of::<Job>() as u64),
            });
            self.bind = Some(bind_group(
                dev,
                "block",
                &self.pipes.block_bgl,
                &[
                    params,
                    self.xs.as_entire_binding(),
                    self.ylab.as_entire_binding(),
                    self.rl.buf.as_entire_binding(),
                    self.wl.buf.as_entire_binding(),
                    self.wv.buf.as_entire_binding(),
                    self.out.buf.as_entire_binding(),
                ],
            ));
        }
    }

    /// Blocks of `prob` on `ctx` (`cfg.precision` is the accumulation's; `cfg.max_chunk_bytes`
    /// caps the slot buffer, for tests).
    pub fn new(prob: &'a Problem<'a>, ctx: &'a GpuContext, cfg: GpuConfig) -> Result<Self> {
        let wide = cfg.precision == Precision::F64;
        let pipes = ctx.pipelines(wide)?;
        let dev = &ctx.device;
        let lim = &ctx.limits;
        let m = prob.len();
        let d = prob.data.n_features().max(1);
        let dpad = d.next_multiple_of(4);
        let max_slots = Self::row_slots(ctx, cfg, m, d)?;
        let cap = max_slots.min(1024);
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let ylab = Self::label_buffer(dev, prob);
        let param_stride = (std::mem::size_of::<Job>() as u64)
            .next_multiple_of(lim.min_uniform_buffer_offset_alignment as u64);
        let (kind, degree, gamma, coef0) = kernel_params(prob.kernel);
        let gt = if wide { 8 } else { 4 };
        let engine = GpuBlocks {
            prob,
            ctx,
            pipes,
            wide,
            gt,
            d,
            dpad,
            base: Job {
                dpad: dpad as u32,
                d: prob.data.n_features() as u32,
                kind,
                degree,
                gamma: split(gamma),
                coef0: split(coef0),
                inv_c: split(prob.inv_c_by_class().0),
                inv_c_neg: split(prob.inv_c_by_class().1),
                ..Default::default()
            },
            max_slots,
            cap,
            slot_of: vec![NONE; m],
            owner: vec![NONE; cap],
            stamp: vec![0; cap],
            epoch: 0,
            hand: 0,
            xs: Self::slot_buffer(dev, cap, dpad),
            ylab,
            rl: Grow::new(dev, "block rows", 8 * 1024, storage),
            wl: Grow::new(dev, "block weights", 8 * 1024, storage),
            wv: Grow::new(dev, "block weight values", gt * 1024, storage),
            out: Grow::new(
                dev,
                "block output",
                gt * 1024,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            staging: Grow::new(
                dev,
                "block readback",
                gt * 1024,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            params: Grow::new(
                dev,
                "block params",
                param_stride * 4,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            ),
            param_stride,
            bind: None,
            uploads: Vec::new(),
            up_host: Vec::new(),
            rl_host: Vec::new(),
            wl_host: Vec::new(),
            wv_host: Vec::new(),
            jobs_host: Vec::new(),
            ws: Vec::new(),
            param_bytes: Vec::new(),
            readback: Vec::new(),
            map_state: Arc::new(AtomicU8::new(0)),
            uploaded_rows: 0,
            cpu: CpuBlocks::new(prob),
            cpu_calls: 0,
        };
        ctx.check("block engine set-up")?;
        Ok(engine)
    }

    /// Rows one storage binding holds (at most m): an error when not even two fit.
    fn row_slots(ctx: &GpuContext, cfg: GpuConfig, m: usize, d: usize) -> Result<usize> {
        let lim = &ctx.limits;
        let max_bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
        let limit = cfg.max_chunk_bytes.unwrap_or(max_bind).min(max_bind);
        let row_bytes = d.next_multiple_of(4) as u64 * 4;
        let max_slots = ((limit / row_bytes) as usize).min(m.max(1));
        if max_slots < 2 {
            return Err(Error::Backend(format!(
                "a dense row of {d} features ({row_bytes} bytes) leaves no room for two rows in {}'s {limit}-byte storage binding; use the CPU backend",
                ctx.adapter.name
            )));
        }
        Ok(max_slots)
    }

    /// The labels as f32 (at least 16 bytes), uploaded.
    fn label_buffer(dev: &wgpu::Device, prob: &Problem<'_>) -> wgpu::Buffer {
        let y32: Vec<f32> = prob.y.iter().map(|&v| v as f32).collect();
        let mut ybytes: Vec<u8> = bytemuck::cast_slice(&y32).to_vec();
        ybytes.resize(ybytes.len().max(16), 0);
        dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("block y"),
            contents: &ybytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        })
    }

    fn slot_buffer(dev: &wgpu::Device, cap: usize, dpad: usize) -> wgpu::Buffer {
        dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("block rows (dense slots)"),
            size: (cap as u64 * dpad as u64 * 4).max(256),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Resident slots.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Rows uploaded since creation.
    pub fn uploaded_rows(&self) -> u64 {
        self.uploaded_rows
    }

    /// Calls computed on the CPU because their rows did not fit the device's slot buffer.
    pub fn cpu_calls(&self) -> u64 {
        self.cpu_calls
    }

    /// Marks row i as used by this call, giving it a slot if needed; false when every slot is
    /// already used by this call.
    fn touch(&mut self, i: usize) -> bool {
        let s = self.slot_of[i];
        if s != NONE {
            self.stamp[s as usize] = self.epoch;
            return true;
        }
        for _ in 0..self.cap {
            let h = self.hand;
            self.hand = (self.hand + 1) % self.cap;
            if self.stamp[h] < self.epoch {
                let old = self.owner[h];
                if old != NONE {
                    self.slot_of[old as usize] = NONE;
                }
                self.owner[h] = i as u32;
                self.slot_of[i] = h as u32;
                self.stamp[h] = self.epoch;
                self.uploads.push((h as u32, i as u32));
                return true;
            }
        }
        false
    }

    /// Makes every row of the jobs resident, growing the slot buffer when they do not fit;
    /// false (nothing assigned) when they cannot fit one storage binding.
    fn make_resident(&mut self, jobs: &[BlockJob<'_>]) -> bool {
        loop {
            self.epoch += 1;
            self.uploads.clear();
            let mut ok = true;
            for job in jobs {
                for &i in job.rows {
                    ok &= self.touch(i);
                }
                job.weights.for_each(|j, _| ok &= self.touch(j));
                if !ok {
                    break;
                }
            }
            if ok {
                return true;
            }
            if self.cap == self.max_slots {
                // Undo this call's assignments: those rows were never uploaded.
                for &(h, i) in &self.uploads {
                    self.slot_of[i as usize] = NONE;
                    self.owner[h as usize] = NONE;
                    self.stamp[h as usize] = 0;
                }
                self.uploads.clear();
                return false;
            }
            // Grow and start over (everything is uploaded again).
            self.cap = (2 * self.cap).min(self.max_slots);
            self.xs = Self::slot_buffer(&self.ctx.device, self.cap, self.dpad);
            self.bind = None;
            for o in self.owner.drain(..) {
                if o != NONE {
                    self.slot_of[o as usize] = NONE;
                }
            }
            self.owner = vec![NONE; self.cap];
            self.stamp = vec![0; self.cap];
            self.hand = 0;
        }
    }

    /// Writes the rows of this call's new slots (one write per run of consecutive slots).
    fn upload_rows(&mut self) {
        self.uploads.sort_unstable();
        let dpad = self.dpad;
        let mut k = 0;
        while k < self.uploads.len() {
            let first = self.uploads[k].0;
            let mut e = k + 1;
            while e < self.uploads.len() && self.uploads[e].0 == first + (e - k) as u32 {
                e += 1;
            }
            self.up_host.clear();
            self.up_host.resize((e - k) * dpad, 0.0);
            for (r, &(_, i)) in self.uploads[k..e].iter().enumerate() {
                let dst = &mut self.up_host[r * dpad..(r + 1) * dpad];
                match self.prob.data.row(i as usize) {
                    Row::Dense(v) => dst[..v.len()].copy_from_slice(v),
                    Row::Sparse(ix, vs) => {
                        for (&f, &x) in ix.iter().zip(vs) {
                            dst[f as usize] = x;
                        }
                    }
                }
            }
            self.ctx.queue.write_buffer(
                &self.xs,
                first as u64 * dpad as u64 * 4,
                bytemuck::cast_slice(&self.up_host),
            );
            self.uploaded_rows += (e - k) as u64;
            k = e;
        }
    }

    fn push_gt(&mut self, v: f64) {
        if self.wide {
            self.wv_host.extend_from_slice(&v.to_le_bytes());
        } else {
            self.wv_host.extend_from_slice(&(v as f32).to_le_bytes());
        }
    }
}

impl BlockEngine for GpuBlocks<'_> {
    fn len(&self) -> usize {
        self.prob.len()
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.prob.q(i, j)
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.prob.q_diag(i)
    }

    fn name(&self) -> String {
        format!(
            "gpu: {} ({}, {} blocks)",
            self.ctx.adapter.name,
            self.ctx.adapter.backend,
            if self.wide { "f64" } else { "f32" }
        )
    }

    fn run(&mut self, jobs: &mut [BlockJob<'_>]) -> Result<()> {
        let total_rows: usize = jobs.iter().map(|j| j.rows.len()).sum();
        if total_rows == 0 {
            return Ok(());
        }
        if !self.make_resident(jobs) {
            if self.cpu_calls == 0 {
                let need: usize = jobs.iter().map(|j| j.rows.len() + j.weights.len()).sum();
                eprintln!(
                    "fwsvm: a sampled block needs up to {need} resident rows of {} features, more than {} holds in one storage binding ({}); such blocks run on the CPU",
                    self.d, self.ctx.adapter.name, self.max_slots
                );
            }
            self.cpu_calls += 1;
            return self.cpu.run(jobs);
        }
        self.upload_rows();
        self.fill_job_lists(jobs);
        self.ensure_buffers(jobs.len(), total_rows);
        let q = &self.ctx.queue;
        self.param_bytes.clear();
        self.param_bytes
            .resize(jobs.len() * self.param_stride as usize, 0);
        for (k, jb) in self.jobs_host.iter().enumerate() {
            let o = k * self.param_stride as usize;
            self.param_bytes[o..o + std::mem::size_of::<Job>()]
                .copy_from_slice(bytemuck::bytes_of(jb));
        }
        q.write_buffer(&self.params.buf, 0, &self.param_bytes);
        q.write_buffer(&self.rl.buf, 0, bytemuck::cast_slice(&self.rl_host));
        if !self.wl_host.is_empty() {
            q.write_buffer(&self.wl.buf, 0, bytemuck::cast_slice(&self.wl_host));
            q.write_buffer(&self.wv.buf, 0, &self.wv_host);
        }
        let dev = &self.ctx.device;
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let bind = self.bind.as_ref().expect("bound above");
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for (k, jb) in self.jobs_host.iter().enumerate() {
                if jb.nrows == 0 {
                    continue;
                }
                let per_row = jb.nw as usize > THREAD_MAX_W;
                let groups = if per_row {
                    jb.nrows as u64
                } else {
                    (jb.nrows as u64).div_ceil(256)
                };
                pass.set_pipeline(if per_row {
                    &self.pipes.block_row
                } else {
                    &self.pipes.block_thread
                });
                pass.set_bind_group(0, bind, &[(k as u64 * self.param_stride) as u32]);
                let nx = jb.nx as u64;
                pass.dispatch_workgroups(nx as u32, groups.div_ceil(nx) as u32, 1);
            }
        }
        let bytes = total_rows as u64 * self.gt;
        enc.copy_buffer_to_buffer(
            &self.out.buf,
            0,
            &self.staging.buf,
            0,
            bytes.next_multiple_of(4),
        );
        q.submit([enc.finish()]);
        read_back(
            self.ctx,
            &self.staging.buf,
            bytes,
            &self.map_state,
            &mut self.readback,
        )?;
        let mut k = 0;
        for job in jobs.iter_mut() {
            for o in job.out.iter_mut() {
                *o = super::passes::read_gt(&self.readback, k, self.wide);
                k += 1;
            }
        }
        Ok(())
    }
}
