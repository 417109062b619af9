//! The working-set loop on the device ([`DeviceLoop`] for [`GpuBackend`]): whole outer
//! iterations of ws as passes of `shaders/resident.wgsl`, recorded a batch of K iterations at
//! a time into one submit.
//!
//! Device-resident for the loop: α (dense), g (the backend's), W with its cache slots (the
//! first q slots of the column cache; the points of W kept from one iteration to the next keep
//! their columns), the q×q block and the counters. Inside a batch nothing travels to the host;
//! at its end the host reads one status record per iteration (s, v, g_s, g_v, αᵀg, |W|, inner
//! steps, converged) and W with its new α (what the host's α needs: at most K·q pairs, never a
//! block or an m-vector), waiting on that submission alone (never draining the queue). After
//! the stop rule held, the batch's remaining passes return at once.
//!
//! K comes from two measurements: the round trip (an empty submit and a map, best of three,
//! when the loop is set up) and the device time of an iteration (each full batch's wall time
//! less a round trip, over K). K is the smallest that makes the round trip a tenth of a
//! batch, at most [`KMAX`], and at most what a quarter second holds (a time limit or an
//! interruption is seen within that).
//!
//! W's new columns are computed eight per workgroup, the eight points' rows staged in
//! workgroup memory where they fit (up to 444 features) and each invocation's row against them
//! in registers, the exponential and the labels applied as each value is stored.
//!
//! The selection: the previous W's first q/2 support vectors are kept; the ⌈(q − kept)/2⌉
//! lowest g over the other points (toward) and the highest g over the other support vectors
//! (away; those toward took are dropped) join them — each chosen by an eight-bit radix
//! select on g's f32 keys, ties to the lower point, listed in the points' order — and W is
//! toward, away, kept: the points kept next are the newest, so none stays in W for long
//! without being chosen again (keeping the oldest instead took 3.6× the outer iterations on
//! a9a's first 5,000 rows). The inner solve is [`crate::solver::block_steps`]'s rule, step for
//! step (the tests replay the whole loop on the host in f64 and compare).

use super::pipelines::{B, COLUMN_BATCH_CSR, COLUMN_BATCH_DENSE, Pipelines, layout};
use super::*;
use crate::backend::stats::timed_call;
use crate::backend::{DeviceLoop, LoopReport, LoopSettings, MAX_BLOCK, call};
use std::time::Instant;

/// shaders/resident.wgsl
pub const RESIDENT: &str = include_str!("../../../shaders/resident.wgsl");
/// shaders/resident_dense.wgsl
pub const RESIDENT_DENSE: &str = include_str!("../../../shaders/resident_dense.wgsl");
/// shaders/resident_csr.wgsl
pub const RESIDENT_CSR: &str = include_str!("../../../shaders/resident_csr.wgsl");

/// Iterations one batch holds at most (its status records).
pub const KMAX: usize = 64;
/// The longest a batch should run, in seconds (a time limit is seen within it).
const BATCH_SECONDS: f64 = 0.25;

// Offsets shared with shaders/resident.wgsl.
const C_DONE: usize = 0;
const C_LOCAL: usize = 3;
const C_PIDX: usize = 4640;
const CTL_WORDS: usize = C_PIDX + 2 * 1024;
const V_AG: usize = 2;
const V_PART: usize = 8;
const RU: usize = 8;
const RV: usize = 4;
const BK: usize = 8;
/// Storage buffers of the loop's own layout.
const OWN_STORAGE: u32 = 13;

/// shaders/resident.wgsl's `Resident`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ResidentParams {
    m: u32,
    q: u32,
    slot: u32,
    nwg: u32,
    block_rows: u32,
    kmax: u32,
    dpad: u32,
    pad0: u32,
    eps: [f32; 2],
    rel_eps: [f32; 2],
}

/// The loop's bind-group layout (group 1 is a data chunk's).
const LAYOUT: &[B] = {
    use B::*;
    &[
        Uniform, Uniform, Ro, Ro, Rw, Rw, Rw, Rw, Rw, Rw, Rw, Rw, Rw, Rw, Rw,
    ]
};

/// The full WGSL text of the loop for the f32 or f64 gradient over dense or CSR chunks.
pub fn source(wide: bool, dense: bool) -> String {
    let mut s = super::pipelines::kernel_prelude(wide);
    s.push_str(RESIDENT);
    if dense {
        s.push_str(COLUMN_BATCH_DENSE);
        s.push_str(RESIDENT_DENSE);
    } else {
        s.push_str(COLUMN_BATCH_CSR);
        s.push_str(RESIDENT_CSR);
    }
    s
}

/// The loop's pipelines, one per entry point, over one layout.
pub struct ResidentPipes {
    bgl: wgpu::BindGroupLayout,
    begin: wgpu::ComputePipeline,
    radix: wgpu::ComputePipeline,
    pick: wgpu::ComputePipeline,
    count: wgpu::ComputePipeline,
    place: wgpu::ComputePipeline,
    assemble: wgpu::ComputePipeline,
    queries: wgpu::ComputePipeline,
    columns: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
    inner: wgpu::ComputePipeline,
    update: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
}

impl ResidentPipes {
    /// Compiles the loop, or says which of the adapter's limits it exceeds.
    pub(super) fn new(
        dev: &wgpu::Device,
        wide: bool,
        dense: bool,
        pipes: &Pipelines,
    ) -> std::result::Result<Self, String> {
        let lim = dev.limits();
        let storage = OWN_STORAGE + if dense { 2 } else { 4 };
        if lim.max_storage_buffers_per_shader_stage < storage {
            return Err(format!(
                "it needs {storage} storage buffers per shader stage, the adapter allows {}",
                lim.max_storage_buffers_per_shader_stage
            ));
        }
        if lim.max_compute_workgroup_storage_size < 16 << 10 {
            return Err(format!(
                "it needs 16 KiB of workgroup memory, the adapter allows {} bytes",
                lim.max_compute_workgroup_storage_size
            ));
        }
        let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("resident"),
            source: wgpu::ShaderSource::Wgsl(source(wide, dense).into()),
        });
        let bgl = layout(dev, "resident", LAYOUT);
        let chunk = if dense {
            &pipes.dense_bgl
        } else {
            &pipes.csr_bgl
        };
        let pl = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("resident"),
            bind_group_layouts: &[Some(&bgl), Some(chunk)],
            immediate_size: 0,
        });
        let make = |entry: &str| {
            dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Ok(ResidentPipes {
            begin: make("begin"),
            radix: make("radix"),
            pick: make("pick"),
            count: make("count"),
            place: make("place"),
            assemble: make("assemble"),
            queries: make("queries"),
            columns: make("columns"),
            gather: make("gather"),
            inner: make("inner"),
            update: make("update"),
            finish: make("finish"),
            bgl,
        })
    }
}

/// One problem's loop state on the device (see the module's doc).
pub(super) struct Resident {
    pipes: Arc<ResidentPipes>,
    bg: wgpu::BindGroup,
    rparams: wgpu::Buffer,
    alpha: wgpu::Buffer,
    ctl: wgpu::Buffer,
    sv: wgpu::Buffer,
    mark: wgpu::Buffer,
    stat_u: wgpu::Buffer,
    stat_v: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// q of this loop (W's largest size).
    pub(super) q: usize,
    nwg: u32,
    /// The device's α and W describe the host's iterate (false after any host-side change).
    pub(super) synced: bool,
    /// Seconds of a round trip, and of one outer iteration on the device (0: not measured).
    round_trip: f64,
    per_iter: f64,
    map_state: Arc<AtomicU8>,
    readback: Vec<u8>,
    host: Vec<u8>,
}

impl Resident {
    /// Sets the loop up for q on `be`'s device (its buffers, bindings and the round trip).
    pub(super) fn new(be: &GpuBackend<'_>, q: usize) -> Result<Resident> {
        let ctx = be.ctx;
        let dev = &ctx.device;
        let pipes = ctx.resident_pipelines(be.wide, be.dense)?;
        let (m, gt) = (be.prob.len(), be.gt);
        let scope = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let make = |label: &str, bytes: u64, usage: wgpu::BufferUsages| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16).next_multiple_of(16),
                usage,
                mapped_at_creation: false,
            })
        };
        let (q64, k64) = (q as u64, KMAX as u64);
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let params = make("resident params", PARAMS_SIZE, uniform);
        let rparams = make(
            "resident settings",
            std::mem::size_of::<ResidentParams>() as u64,
            uniform,
        );
        let alpha = make("alpha", m as u64 * gt, storage);
        let wl = make("working set", 5 * q64 * 4, storage);
        let blk = make("block", (q64 * q64 + 3 * q64) * gt, storage);
        let ctl = make("loop counters", CTL_WORDS as u64 * 4, storage);
        let sv = make("loop values", (V_PART as u64 + 3 * 1024) * gt, storage);
        let mark = make("loop marks", m as u64 * 4, storage);
        let u_bytes = (RU as u64 * k64 + k64 * q64) * 4;
        let v_bytes = (RV as u64 * k64 + k64 * q64) * gt;
        let stat_u = make("status", u_bytes, storage);
        let stat_v = make("status values", v_bytes, storage);
        let wq = make("working-set rows", q64 * be.dpad as u64 * 4, storage);
        let staging = make(
            "loop readback",
            u_bytes + v_bytes + 64,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let slot = be.slot_stride / gt;
        let cache_bytes = q64 * be.slot_stride;
        let mut p = be.base_params();
        p.n = BK as u32;
        p.flags = 0;
        let nwg = be.nwg_rows;
        let rp = ResidentParams {
            m: m as u32,
            q: q as u32,
            slot: slot as u32,
            nwg,
            block_rows: m.div_ceil(nwg as usize) as u32,
            kmax: KMAX as u32,
            dpad: be.dpad as u32,
            pad0: 0,
            eps: [0.0; 2],
            rel_eps: [0.0; 2],
        };
        ctx.queue.write_buffer(&params, 0, bytemuck::bytes_of(&p));
        ctx.queue.write_buffer(&rparams, 0, bytemuck::bytes_of(&rp));
        fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
            b.as_entire_binding()
        }
        let cache = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &be.cache_buf,
            offset: 0,
            size: wgpu::BufferSize::new(cache_bytes),
        });
        let bg = bind_group(
            dev,
            "resident",
            &pipes.bgl,
            &[
                whole(&params),
                whole(&rparams),
                whole(&be.norms),
                whole(&be.ylab),
                whole(&be.g),
                whole(&alpha),
                cache,
                whole(&wl),
                whole(&blk),
                whole(&ctl),
                whole(&sv),
                whole(&mark),
                whole(&stat_u),
                whole(&stat_v),
                whole(&wq),
            ],
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Backend(format!(
                "{} could not hold the device loop's buffers (q = {q}): {e}",
                ctx.adapter.name
            )));
        }
        ctx.check("device loop setup")?;
        let mut r = Resident {
            pipes,
            bg,
            rparams,
            alpha,
            ctl,
            sv,
            mark,
            stat_u,
            stat_v,
            staging,
            q,
            nwg,
            synced: false,
            round_trip: 0.0,
            per_iter: 0.0,
            map_state: Arc::new(AtomicU8::new(0)),
            readback: Vec::new(),
            host: Vec::new(),
        };
        r.round_trip = r.measure_round_trip(ctx)?;
        Ok(r)
    }

    /// The best of three round trips: a submit with one small copy, and its map.
    fn measure_round_trip(&mut self, ctx: &GpuContext) -> Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(&self.ctl, 0, &self.staging, 0, 16);
            let idx = ctx.queue.submit([enc.finish()]);
            self.wait_and_read(ctx, idx, 16)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(best)
    }

    /// Maps the first `bytes` of the staging buffer once submission `idx` has run (waiting on
    /// it alone) and copies them into `self.readback`.
    fn wait_and_read(
        &mut self,
        ctx: &GpuContext,
        idx: wgpu::SubmissionIndex,
        bytes: u64,
    ) -> Result<()> {
        let state = &self.map_state;
        state.store(0, Ordering::Relaxed);
        let flag = state.clone();
        let slice = self.staging.slice(0..bytes.max(4).next_multiple_of(4));
        slice.map_async(wgpu::MapMode::Read, move |r| {
            flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::Release);
        });
        let fail = |e: &dyn std::fmt::Display| Error::Backend(format!("{}: {e}", ctx.adapter.name));
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(idx),
                timeout: None,
            })
            .map_err(|e| fail(&e))?;
        // The map's callback runs in a poll (possibly another thread's).
        while state.load(Ordering::Acquire) == 0 {
            ctx.device
                .poll(wgpu::PollType::Poll)
                .map_err(|e| fail(&e))?;
            std::thread::yield_now();
        }
        ctx.check("device loop")?;
        if state.load(Ordering::Acquire) != 1 {
            return Err(fail(&"reading the device loop's status back failed"));
        }
        {
            let view = slice.get_mapped_range().map_err(|e| fail(&e))?;
            self.readback.clear();
            self.readback.extend_from_slice(&view[..bytes as usize]);
        }
        self.staging.unmap();
        Ok(())
    }

    /// Iterations in the next batch (see the module's doc).
    fn batch_len(&self, left: u64, asked: Option<usize>) -> usize {
        let k = if let Some(k) = asked {
            k.clamp(1, KMAX)
        } else if self.per_iter > 0.0 {
            let hide = (9.0 * self.round_trip / self.per_iter).ceil();
            let fit = (BATCH_SECONDS / self.per_iter).floor().max(1.0);
            hide.min(fit).clamp(1.0, KMAX as f64) as usize
        } else {
            2
        };
        k.min(left.max(1).min(KMAX as u64) as usize)
    }

    /// One outer iteration's passes.
    fn record(&self, pass: &mut wgpu::ComputePass<'_>, chunks: &[Chunk]) -> u64 {
        let p = &self.pipes;
        let q = self.q as u32;
        let mut n = 0u64;
        let mut one = |pass: &mut wgpu::ComputePass<'_>, pipe: &wgpu::ComputePipeline, x: u32| {
            pass.set_pipeline(pipe);
            pass.dispatch_workgroups(x, 1, 1);
            n += 1;
        };
        pass.set_bind_group(0, &self.bg, &[]);
        pass.set_bind_group(1, &chunks[0].bind, &[]);
        one(pass, &p.begin, 1);
        for _ in 0..4 {
            one(pass, &p.radix, self.nwg);
            one(pass, &p.pick, 1);
        }
        one(pass, &p.count, self.nwg);
        one(pass, &p.place, self.nwg);
        one(pass, &p.assemble, 1);
        for c in chunks {
            pass.set_bind_group(1, &c.bind, &[]);
            one(pass, &p.queries, q.div_ceil(WG as u32));
        }
        pass.set_pipeline(&p.columns);
        for c in chunks {
            pass.set_bind_group(1, &c.bind, &[]);
            pass.dispatch_workgroups(c.nwg, q.div_ceil(BK as u32), 1);
        }
        pass.set_bind_group(1, &chunks[0].bind, &[]);
        one(pass, &p.gather, (q * q).div_ceil(WG as u32));
        one(pass, &p.inner, 1);
        one(pass, &p.update, self.nwg);
        one(pass, &p.finish, 1);
        n + chunks.len() as u64
    }

    /// The host's α and αᵀg onto the device; W, the marks and the counters cleared.
    fn sync(&mut self, be: &GpuBackend<'_>, alpha: &ActiveSet, s: &LoopSettings) {
        let (m, wide) = (be.prob.len(), be.wide);
        let gt = be.gt as usize;
        self.host.clear();
        self.host.resize(m * gt, 0);
        for (i, a) in alpha.iter() {
            put_gt(&mut self.host, i, a, wide);
        }
        let q = &be.ctx.queue;
        q.write_buffer(&self.alpha, 0, &self.host);
        q.write_buffer(&self.ctl, 0, &vec![0u8; CTL_WORDS * 4]);
        self.host.clear();
        self.host.resize(gt, 0);
        put_gt(&mut self.host, 0, s.alpha_g, wide);
        q.write_buffer(&self.sv, (V_AG * gt) as u64, &self.host);
    }

    /// One batch (see [`DeviceLoop::run_batch`]).
    fn batch(
        &mut self,
        be: &mut GpuBackend<'_>,
        alpha: &mut ActiveSet,
        s: &LoopSettings,
    ) -> Result<LoopReport> {
        let ctx = be.ctx;
        let (wide, gt) = (be.wide, be.gt);
        let q = &ctx.queue;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let mut up = 8u64;
        if !self.synced {
            self.sync(be, alpha, s);
            enc.clear_buffer(&self.mark, 0, None);
            // The first q slots now belong to the loop.
            be.cache.clear_to(be.prob.len());
            up += be.prob.len() as u64 * gt + CTL_WORDS as u64 * 4 + gt;
            self.synced = true;
        }
        // ε and rel_eps sit after the eight u32 of `Resident`.
        let (e, r) = (split(s.eps), split(s.rel_eps));
        q.write_buffer(
            &self.rparams,
            32,
            bytemuck::cast_slice(&[e[0], e[1], r[0], r[1]]),
        );
        q.write_buffer(&self.ctl, (C_DONE * 4) as u64, &0u32.to_le_bytes());
        q.write_buffer(&self.ctl, (C_LOCAL * 4) as u64, &0u32.to_le_bytes());
        let k = self.batch_len(s.max_iterations, s.batch);
        let mut dispatches = 0;
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for _ in 0..k {
                dispatches += self.record(&mut pass, &be.chunks);
            }
        }
        let (qq, kk) = (self.q as u64, k as u64);
        let u_bytes = (RU as u64 * KMAX as u64 + kk * qq) * 4;
        let v_off = u_bytes.next_multiple_of(8);
        let v_bytes = (RV as u64 * KMAX as u64 + kk * qq) * gt;
        let c_off = (v_off + v_bytes).next_multiple_of(8);
        enc.copy_buffer_to_buffer(&self.stat_u, 0, &self.staging, 0, u_bytes);
        enc.copy_buffer_to_buffer(&self.stat_v, 0, &self.staging, v_off, v_bytes);
        enc.copy_buffer_to_buffer(&self.ctl, 0, &self.staging, c_off, 16);
        let t = Instant::now();
        let idx = q.submit([enc.finish()]);
        let total = c_off + 16;
        self.wait_and_read(ctx, idx, total)?;
        let wall = t.elapsed().as_secs_f64();
        be.stats.submits += 1;
        be.stats.round_trips += 1;
        be.stats.dispatches += dispatches;
        be.stats.bytes_up += up;
        be.stats.bytes_down += total;
        be.stats.wait_ns += (wall * 1e9) as u64;
        be.g_changed();
        be.min_valid = false;
        let b = &self.readback;
        let u = |k: usize| passes::read_u32(b, 4 * k);
        let v = |k: usize| passes::read_gt(&b[v_off as usize..], k, wide);
        let local = passes::read_u32(b, c_off as usize + 4 * C_LOCAL) as usize;
        let (mut inner_steps, mut sizes) = (0u64, 0u64);
        let mut red = None;
        for l in 0..local.min(k) {
            let n = u(RU * l + 3) as usize;
            inner_steps += u(RU * l + 4) as u64;
            be.stats.columns_computed += u(RU * l + 6) as u64;
            sizes += n as u64;
            for j in 0..n {
                let i = u(RU * KMAX + l * self.q + j) as usize;
                alpha.set(i, v(RV * KMAX + l * self.q + j));
            }
            let (si, vi) = (u(RU * l + 1), u(RU * l + 2));
            red = Some(Reduction {
                s: if si == NONE { 0 } else { si as usize },
                g_s: if si == NONE { f64::NAN } else { v(RV * l) },
                v: if vi == NONE { usize::MAX } else { vi as usize },
                g_v: if vi == NONE {
                    f64::NEG_INFINITY
                } else {
                    v(RV * l + 1)
                },
                alpha_g: v(RV * l + 2),
                alpha_g_prev: 0.0,
            });
        }
        let Some(red) = red else {
            return Err(Error::Backend(format!(
                "{}: the device loop ran no iteration",
                ctx.adapter.name
            )));
        };
        if local == k {
            let it = ((wall - self.round_trip).max(0.0) / k as f64).max(1e-9);
            self.per_iter = if self.per_iter > 0.0 {
                0.5 * (self.per_iter + it)
            } else {
                it
            };
        }
        Ok(LoopReport {
            red,
            iterations: local as u64,
            inner_steps,
            sizes,
            q: self.q,
        })
    }
}

/// Writes `x` as entry `k` of a GT vector's bytes.
fn put_gt(b: &mut [u8], k: usize, x: f64, wide: bool) {
    if wide {
        b[8 * k..8 * k + 8].copy_from_slice(&x.to_le_bytes());
    } else {
        b[4 * k..4 * k + 4].copy_from_slice(&(x as f32).to_le_bytes());
    }
}

impl GpuBackend<'_> {
    /// Whether the working-set loop runs on the device here: asked for (or, by default, a
    /// hardware adapter), no g⁻ and no guests, and the adapter compiles it.
    pub(super) fn loop_available(&self) -> bool {
        self.loop_on
            && !self.prev
            && self.guests.is_empty()
            && !self.chunks.is_empty()
            && self.ctx.resident_pipelines(self.wide, self.dense).is_ok()
    }

    /// A host-side change of α or g, or a host column that may take one of W's slots: the
    /// device loop starts again from the host's iterate (W empty, the host's cache cleared).
    pub(super) fn loop_stale(&mut self) {
        if let Some(r) = self.resident.as_mut() {
            r.synced = false;
        }
    }

    /// The largest q the loop can take here: the cache's slots, one binding, [`MAX_BLOCK`].
    fn loop_q(&self, q: usize) -> usize {
        let lim = &self.ctx.limits;
        let bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
        let by_bind = (bind / self.slot_stride) as usize;
        let most = self.cache.capacity().min(by_bind).clamp(2, MAX_BLOCK);
        q.clamp(2, most)
    }
}

impl DeviceLoop for GpuBackend<'_> {
    fn run_batch(&mut self, alpha: &mut ActiveSet, s: &LoopSettings) -> Result<LoopReport> {
        timed_call!(self.stats, call::DEVICE_LOOP, Result<LoopReport>, {
            self.flush();
            let q = self.loop_q(s.q);
            if self.resident.as_ref().is_none_or(|r| r.q != q) {
                self.resident = None;
                self.resident = Some(Resident::new(self, q)?);
            }
            let mut r = self.resident.take().expect("set above");
            let out = r.batch(self, alpha, s);
            self.resident = Some(r);
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop's four programs (f32/f64 gradient, dense/CSR chunks) parse and validate with
    /// naga without an adapter, and the host's offsets are the shader's.
    #[test]
    fn the_loop_validates_and_agrees_with_the_host() {
        for wide in [false, true] {
            for dense in [false, true] {
                let src = source(wide, dense);
                let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
                    panic!("f64 {wide}, dense {dense}: {}", e.emit_to_string(&src))
                });
                naga::valid::Validator::new(
                    naga::valid::ValidationFlags::all(),
                    naga::valid::Capabilities::all(),
                )
                .validate(&module)
                .unwrap_or_else(|e| panic!("f64 {wide}, dense {dense}: {e:?}"));
            }
        }
        let consts = |name: &str| -> usize {
            let pat = format!("const {name}: u32 = ");
            let at = RESIDENT
                .find(&pat)
                .unwrap_or_else(|| panic!("{name} not in the shader"));
            let rest = &RESIDENT[at + pat.len()..];
            rest[..rest.find('u').unwrap()].parse().unwrap()
        };
        for (name, host) in [
            ("C_DONE", C_DONE),
            ("C_LOCAL", C_LOCAL),
            ("C_PIDX", C_PIDX),
            ("V_AG", V_AG),
            ("V_PART", V_PART),
            ("RU", RU),
            ("RV", RV),
            ("BK", BK),
        ] {
            assert_eq!(consts(name), host, "{name}");
        }
        assert_eq!(std::mem::size_of::<ResidentParams>(), 48);
        assert_eq!(
            LAYOUT
                .iter()
                .filter(|b| **b == B::Rw || **b == B::Ro)
                .count() as u32,
            OWN_STORAGE
        );
    }
}
