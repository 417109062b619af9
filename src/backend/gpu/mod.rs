//! The GPU backend: the [`Backend`] seam on wgpu, with WGSL compute shaders (`shaders/`) for
//! the kernel columns, the fused gradient update and the reductions; the host keeps only each
//! variant's scalar step logic.
//!
//! Device-resident for the life of a problem (all created at load, none per iteration): the
//! data in chunks no larger than a storage binding (dense chunks feature-major, so neighbouring
//! invocations read neighbouring words; CSR chunks with chunk-relative `indptr`), ‖x_i‖², y,
//! the gradient g and the previous gradient g⁻ (f32, or f64 with `--precision f64` where the
//! adapter has SHADER_F64), an LRU cache of kernel columns in one buffer addressed by dynamic
//! offsets, the reduction partials, the active list, and one mappable readback buffer.
//!
//! One iteration is one submit and one small readback: [`Backend::update`] only records the
//! column pass (when the column is not cached) and the update pass, whose workgroups also leave
//! their argmin partials; [`Backend::reduce`] uploads the active list, appends the active-set
//! pass and the final combine, submits, and reads back 48 bytes. Gathers and column entries
//! (SWAP-2o, PARTAN) are a submit and readback of their own. Ties go to the lowest index, as on
//! the CPU. Reduction widths come from the adapter: a software adapter gets a few long-running
//! workgroups, a hardware one enough to fill it.

pub mod block;
pub mod context;
pub mod data;
mod passes;
pub mod pipelines;
mod setup;

pub use context::{AdapterSummary, DeviceSelector, GpuContext, best, list_adapters};
pub use data::GpuData;
use data::bind_chunks;

use super::cache::ColumnCache;
use super::cpu::Precision;
use super::{Backend, BackendStats, MarkedReduction, Reduction, Update};
use crate::active::ActiveSet;
use crate::data::Row;
use crate::error::{Error, Result};
use crate::problem::Problem;
use pipelines::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// GPU backend settings.
#[derive(Debug, Clone, Copy)]
pub struct GpuConfig {
    /// Kernel-column cache budget in bytes (device memory).
    pub cache_bytes: usize,
    /// f32 or f64 gradient.
    pub precision: Precision,
    /// Largest data chunk, and tile of batched columns, in bytes (default: the adapter's
    /// storage-binding limit); tests force tiny chunks to exercise the split and the passes
    /// into cache slots.
    pub max_chunk_bytes: Option<u64>,
    /// Rows from which the working set's candidates (`Backend::lowest`) are compacted on the
    /// device instead of reading all of g back (f32 gradients); tests lower it.
    pub compact_min_rows: usize,
}

/// The column cache a GPU gets when none is asked for: on a hardware adapter as much as one
/// storage binding holds (the working set's block is then gathered in one dispatch; 2 GiB on
/// an H100), at least 1 GiB; on a software adapter, whose cache is the host's memory, 1 GiB.
/// Larger working sets follow from it where m is large: q is at most half the columns held.
pub fn gpu_cache_default(ctx: &GpuContext) -> usize {
    const BASE: u64 = 1 << 30;
    if ctx.is_software() {
        return BASE as usize;
    }
    let lim = &ctx.limits;
    let bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
    usize::try_from(bind.max(BASE)).unwrap_or(usize::MAX)
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            cache_bytes: 1024 << 20,
            precision: Precision::F32,
            max_chunk_bytes: None,
            compact_min_rows: COMPACT_MIN_ROWS,
        }
    }
}

/// [`GpuConfig::compact_min_rows`] by default: from a quarter of a million rows (1 MiB of f32
/// gradient) reading g back costs more than the compaction pass's extra round trip (about
/// 100 µs on an H100); at 4·10⁶ rows the whole read was 13.8 MB per iteration.
pub const COMPACT_MIN_ROWS: usize = 1 << 18;

const WG: u64 = 256;
const NONE: u32 = u32::MAX;
/// Params blocks per submit before a flush (each dispatch uses one).
const PARAM_SLOTS: usize = 32;
/// Query rows per submit before a flush.
const QUERY_SLOTS: usize = pipelines::TILE_COLUMNS;

struct Chunk {
    bind: wgpu::BindGroup,
    nwg: u32,
    _bufs: Vec<wgpu::Buffer>,
}

/// What the memory plan counted, for messages.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryPlan {
    /// Data (features, norms, labels).
    pub data_bytes: u64,
    /// Gradients, lists, partials, readback.
    pub vector_bytes: u64,
    /// Column cache.
    pub cache_bytes: u64,
    /// Number of data chunks.
    pub chunks: usize,
    /// Cached columns.
    pub cache_slots: usize,
}

/// The wgpu implementation of [`Backend`].
pub struct GpuBackend<'a> {
    prob: &'a Problem<'a>,
    ctx: &'a GpuContext,
    /// The data buffers the chunks' bind groups refer to.
    _data: Arc<GpuData>,
    pipes: Arc<Pipelines>,
    wide: bool,
    /// [`GpuConfig::compact_min_rows`].
    compact_min_rows: usize,
    gt: u64,
    dense: bool,
    d: usize,
    dpad: usize,
    kind: u32,
    degree: u32,
    gamma: f64,
    coef0: f64,
    /// 1/C_i of the +1 and the −1 rows.
    inv_c: (f64, f64),
    chunks: Vec<Chunk>,
    // buffers
    params: wgpu::Buffer,
    param_stride: u64,
    query: wgpu::Buffer,
    g: wgpu::Buffer,
    gp: wgpu::Buffer,
    lidx: wgpu::Buffer,
    lw: wgpu::Buffer,
    gidx: wgpu::Buffer,
    out: wgpu::Buffer,
    out_bytes: u64,
    res_v: wgpu::Buffer,
    res_i: wgpu::Buffer,
    staging: wgpu::Buffer,
    column_bg: wgpu::BindGroup,
    /// The batched column pass's bind group (None where the adapter cannot bind it).
    batch_bg: Option<wgpu::BindGroup>,
    /// The tiled column pass's bind group, its output buffer and how many columns it holds
    /// (None, 0 where the adapter cannot bind it or one binding holds fewer than eight).
    tile_bg: Option<wgpu::BindGroup>,
    tile: wgpu::Buffer,
    tile_cols: usize,
    /// The cache slots' buffer (the tiled pass's columns are copied into it).
    cache_buf: wgpu::Buffer,
    /// Whether the batch scalars at the end of `query_host` must be uploaded.
    meta_dirty: bool,
    update_bg: wgpu::BindGroup,
    active_bg: wgpu::BindGroup,
    final_bg: wgpu::BindGroup,
    gather_bg: wgpu::BindGroup,
    /// The gather with the whole cache bound: the block in one dispatch (where the cache fits
    /// one binding).
    gather_all_bg: Option<wgpu::BindGroup>,
    below_bg: wgpu::BindGroup,
    marks: wgpu::Buffer,
    mpart_v: wgpu::Buffer,
    mpart_i: wgpu::Buffer,
    marked_bg: wgpu::BindGroup,
    /// Host copy of the marks (to batch contiguous writes).
    marks_host: Vec<u32>,
    slot_stride: u64,
    nwg_rows: u32,
    nwg_list_max: u32,
    // host-side state
    cache: ColumnCache<()>,
    enc: Option<wgpu::CommandEncoder>,
    param_host: Vec<u8>,
    n_params: usize,
    query_host: Vec<f32>,
    n_queries: usize,
    lidx_host: Vec<u32>,
    lw_host: Vec<u8>,
    gidx_host: Vec<u32>,
    /// Bytes of the last readback (reused: no allocation per iteration).
    readback: Vec<u8>,
    /// Bytes of whole vectors uploaded (g, g⁻ at `set_alpha`; counted through `&self`).
    vector_bytes: std::cell::Cell<u64>,
    /// State of the pending map: 0 pending, 1 mapped, 2 failed.
    map_state: Arc<AtomicU8>,
    prev: bool,
    min_valid: bool,
    /// g as last read back whole ([`Backend::lowest`]), while no pass has written g since:
    /// gathers are then served from it without a round trip.
    g_host: Vec<f64>,
    g_host_valid: bool,
    /// (k, the 2k-th smallest g) of the last `lowest`: the next call's filter.
    lowest_bound: (usize, f64),
    /// The working set's cache slots ([`Backend::block`]; reused).
    slot_buf: Vec<usize>,
    fresh: usize,
    stats: BackendStats,
    plan: MemoryPlan,
    /// Points held for their columns only ([`Backend::add_guest`]: a distributed run's
    /// vertices of other ranks): column m + k is guest k's.
    guests: Vec<Guest>,
}

/// A point held for its columns only: its row, y, ‖x‖² and 1/C.
pub(super) struct Guest {
    pub(super) row: crate::data::OwnedRow,
    pub(super) y: f64,
    pub(super) norm: f64,
    pub(super) inv_c: f64,
}

/// Writes row z into a query slot `q` (zeros elsewhere; features beyond the data's `d` are
/// ignored).
fn fill_query(z: Row<'_>, d: usize, q: &mut [f32]) {
    q.iter_mut().for_each(|v| *v = 0.0);
    match z {
        Row::Dense(v) => {
            let n = v.len().min(d);
            q[..n].copy_from_slice(&v[..n]);
        }
        Row::Sparse(ix, vs) => {
            for (&i, &v) in ix.iter().zip(vs) {
                if (i as usize) < d {
                    q[i as usize] = v;
                }
            }
        }
    }
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

impl<'a> GpuBackend<'a> {
    /// Point j's row, y and ‖x‖²: a row of the problem, or guest j − m.
    fn point(&self, j: usize) -> (Row<'_>, f64, f64) {
        let m = self.prob.len();
        if j < m {
            (self.prob.data.row(j), self.prob.y[j], self.prob.norms[j])
        } else {
            let g = &self.guests[j - m];
            (g.row.as_row(), g.y, g.norm)
        }
    }

    /// Checks the memory plan against the adapter's limits and uploads the problem.
    pub fn new(prob: &'a Problem<'a>, ctx: &'a GpuContext, cfg: GpuConfig) -> Result<Self> {
        Self::with_data(prob, ctx, cfg, None)
    }

    /// As [`GpuBackend::new`], but with `shared = (data, rows)` the problem's row i is row
    /// `rows[i]` (ascending; None: row i) of data already on the device (see [`GpuData`]):
    /// nothing of the data is uploaded again, only the problem's vectors (labels, norms,
    /// gradients).
    pub fn with_data(
        prob: &'a Problem<'a>,
        ctx: &'a GpuContext,
        cfg: GpuConfig,
        shared: Option<(&Arc<GpuData>, Option<&[usize]>)>,
    ) -> Result<Self> {
        if prob.has_row_weights() {
            return Err(crate::Error::Backend(
                "per-row weights (sample_weight) run on the CPU backend only".into(),
            ));
        }
        let wide = cfg.precision == Precision::F64;
        let pipes = ctx.pipelines(wide)?;
        let dev = &ctx.device;
        let ds = prob.data;
        let z = setup::Sizes::new(prob, ctx, cfg)?;
        let software = ctx.is_software();
        let scope = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let vscope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let b = setup::Buffers::new(dev, prob, wide, &z);
        let (data, owned) = match shared {
            Some((d, _)) => (d.clone(), false),
            None => (
                Arc::new(GpuData::upload_unscoped(ds, ctx, z.chunk_limit)?),
                true,
            ),
        };
        if data.d != ds.n_features().max(1) || data.dense != ds.is_dense() {
            return Err(Error::Backend(format!(
                "the shared device data ({} features, {}) do not match the problem's ({} features, {})",
                data.d,
                if data.dense { "dense" } else { "csr" },
                ds.n_features(),
                if ds.is_dense() { "dense" } else { "csr" }
            )));
        }
        let m = z.m;
        let mut data_bytes = (4 + z.gt) * m as u64 + if owned { data.bytes } else { 0 };
        let chunks = bind_chunks(dev, &pipes, &data, shared.and_then(|(_, r)| r), m, software)?;
        if !owned {
            data_bytes += 4 * m as u64;
        }
        let bg = setup::BindGroups::new(dev, &pipes, &b, &z);
        let plan = MemoryPlan {
            data_bytes,
            vector_bytes: z.vector_bytes(),
            cache_bytes: z.slot_stride * z.slots,
            chunks: chunks.len(),
            cache_slots: z.slots as usize,
        };
        let val_err = pollster::block_on(vscope.pop());
        let oom = pollster::block_on(scope.pop());
        if let Some(e) = oom.or(val_err) {
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            return Err(Error::Backend(format!(
                "{} could not hold the problem ({:.1} MiB data + {:.1} MiB vectors + {:.1} MiB column cache; lower --cache-mb or use --backend cpu): {e}",
                ctx.adapter.name,
                mib(plan.data_bytes),
                mib(plan.vector_bytes),
                mib(plan.cache_bytes)
            )));
        }
        ctx.check("upload")?;
        let (kind, degree, gamma, coef0) = kernel_params(prob.kernel);
        let setup::Buffers {
            query,
            cache: cache_buf,
            tile,
            params,
            g,
            gp,
            lidx,
            lw,
            gidx,
            out,
            res_v,
            res_i,
            staging,
            marks,
            mpart_v,
            mpart_i,
            ..
        } = b;
        let (dpad, d, out_bytes, param_stride) = (z.dpad, z.d, z.out_bytes, z.param_stride);
        let (slot_stride, nwg_rows, nwg_list_max) = (z.slot_stride, z.nwg_rows, z.nwg_list_max);
        Ok(GpuBackend {
            prob,
            ctx,
            _data: data,
            pipes,
            wide,
            compact_min_rows: cfg.compact_min_rows,
            gt: z.gt,
            dense: ds.is_dense(),
            d,
            dpad,
            kind,
            degree,
            gamma,
            coef0,
            inv_c: prob.inv_c_by_class(),
            chunks,
            params,
            param_stride,
            query,
            g,
            gp,
            lidx,
            lw,
            gidx,
            out,
            out_bytes,
            res_v,
            res_i,
            staging,
            column_bg: bg.column,
            batch_bg: bg.batch,
            tile_cols: if bg.tile.is_some() { z.tile_cols } else { 0 },
            tile_bg: bg.tile,
            tile,
            cache_buf,
            meta_dirty: false,
            update_bg: bg.update,
            active_bg: bg.active,
            final_bg: bg.last,
            gather_bg: bg.gather,
            gather_all_bg: bg.gather_all,
            below_bg: bg.below,
            marks,
            mpart_v,
            mpart_i,
            marked_bg: bg.marked,
            marks_host: Vec::new(),
            slot_stride,
            nwg_rows,
            nwg_list_max,
            cache: ColumnCache::with_slots(m, z.slots as usize),
            enc: None,
            param_host: vec![0u8; param_stride as usize * PARAM_SLOTS],
            n_params: 0,
            query_host: vec![0f32; QUERY_SLOTS * (dpad + 4)],
            n_queries: 0,
            lidx_host: Vec::new(),
            lw_host: Vec::new(),
            gidx_host: Vec::new(),
            readback: Vec::new(),
            vector_bytes: std::cell::Cell::new(0),
            map_state: Arc::new(AtomicU8::new(0)),
            prev: false,
            min_valid: false,
            g_host: Vec::new(),
            g_host_valid: false,
            lowest_bound: (0, f64::NEG_INFINITY),
            slot_buf: Vec::new(),
            guests: Vec::new(),
            fresh: usize::MAX,
            stats: BackendStats::default(),
            plan,
        })
    }

    /// What was allocated on the device.
    pub fn memory_plan(&self) -> MemoryPlan {
        self.plan
    }
}

fn entry(binding: u32, buf: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buf.as_entire_binding(),
    }
}

impl Backend for GpuBackend<'_> {
    fn len(&self) -> usize {
        self.prob.len()
    }

    fn name(&self) -> String {
        format!(
            "gpu: {} ({}, {} gradient, {} columns cached, {} data chunk{})",
            self.ctx.adapter.name,
            self.ctx.adapter.backend,
            if self.wide { "f64" } else { "f32" },
            self.plan.cache_slots,
            self.plan.chunks,
            if self.plan.chunks == 1 { "" } else { "s" }
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        if i < self.prob.len() {
            return self.prob.q_diag(i);
        }
        let g = &self.guests[i - self.prob.len()];
        self.prob.kernel.from_dot(g.norm, g.norm, g.norm) + 1.0 + g.inv_c
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        let m = self.prob.len();
        if i < m && j < m {
            return self.prob.q(i, j);
        }
        // The arithmetic of Problem::q, with a guest's row.
        let ((ri, yi, ni), (rj, yj, nj)) = (self.point(i), self.point(j));
        let v = yi * yj * (self.prob.kernel.from_dot(ri.dot(&rj), ni, nj) + 1.0);
        if i == j {
            v + self.guests[i - m].inv_c
        } else {
            v
        }
    }

    fn add_guest(&mut self, row: Row<'_>, y: f64, inv_c: f64) -> Result<usize> {
        let m = self.prob.len();
        if m + self.guests.len() >= NONE as usize {
            return Err(Error::Backend(
                "too many points for 32-bit column numbers".into(),
            ));
        }
        self.guests.push(Guest {
            row: crate::data::OwnedRow::from(row),
            y,
            norm: row.sq_norm(),
            inv_c,
        });
        Ok(m + self.guests.len() - 1)
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        let mut g = vec![0.0; self.prob.len()];
        super::exact::full_gradient(self.prob, alpha, &mut g);
        self.set_alpha_with(alpha, &g)
    }

    fn set_alpha_with(&mut self, _alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        assert_eq!(g.len(), self.prob.len());
        // Recorded work would otherwise run after the upload below and corrupt it.
        self.flush();
        self.upload_vector(&self.g, g);
        if self.prev {
            self.upload_vector(&self.gp, g);
        }
        self.min_valid = false;
        self.g_host_valid = false;
        Ok(())
    }

    fn enable_prev(&mut self) {
        if !self.prev {
            self.prev = true;
            let bytes = self.prob.len() as u64 * self.gt;
            if bytes > 0 {
                let mut enc = self.take_encoder();
                enc.copy_buffer_to_buffer(&self.g, 0, &self.gp, 0, bytes.next_multiple_of(4));
                self.enc = Some(enc);
            }
        }
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<()> {
            let cols = u.merged_cols();
            let mut p = self.base_params();
            p.flags |= F_WRITE;
            p.scale = split(u.scale);
            let mut slots = [0usize; 2];
            let mut pinned = None;
            for (k, c) in cols.iter().enumerate() {
                if let Some((j, coef)) = *c {
                    let (slot, _) = self.resolve(j, pinned);
                    slots[k] = slot;
                    pinned = Some(slot);
                    if k == 0 {
                        p.flags |= F_COL_A;
                        p.ca = split(coef);
                    } else {
                        p.flags |= F_COL_B;
                        p.cb = split(coef);
                    }
                }
            }
            if self.prev {
                p.cp = split(u.prev_coef);
                if u.rotate {
                    p.flags |= F_ROTATE;
                }
            }
            self.record_update(p, slots[0], slots[1]);
            self.stats.updates += 1;
            Ok(())
        })();
        self.stats.call_ns[crate::backend::call::UPDATE] += t.elapsed().as_nanos() as u64;
        r
    }

    /// Four columns a pass (the terms in the order of updates by pairs, so the same numbers);
    /// with g⁻ kept, or a cache too small to hold four columns at once, by pairs.
    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<()> {
            if self.prev || self.cache.usable() < 6 {
                return super::update_by_pairs(self, scale, cols);
            }
            let mut scale = scale;
            let mut rest = cols;
            while !rest.is_empty() || scale != 1.0 {
                let (now, later) = rest.split_at(rest.len().min(4));
                let mut p = self.base_params();
                p.flags |= F_WRITE;
                p.scale = split(scale);
                let mut slots = [0usize; 4];
                for (k, &(j, c)) in now.iter().enumerate() {
                    // The other three are the most recently used: never the one evicted.
                    let (slot, _) = self.resolve(j, None);
                    slots[k] = slot;
                    let (flag, coef) = match k {
                        0 => (F_COL_A, &mut p.ca),
                        1 => (F_COL_B, &mut p.cb),
                        2 => (F_COL_C, &mut p.cc),
                        _ => (F_COL_D, &mut p.cd),
                    };
                    p.flags |= flag;
                    *coef = split(c);
                }
                self.record_update4(p, slots);
                self.stats.updates += 1;
                scale = 1.0;
                rest = later;
            }
            Ok(())
        })();
        self.stats.call_ns[crate::backend::call::UPDATE_MANY] += t.elapsed().as_nanos() as u64;
        r
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<Reduction> {
            if !self.min_valid {
                let p = self.base_params();
                self.record_update(p, 0, 0);
            }
            let n = alpha.len();
            let nwg2 = if n > 0 { self.list_nwg(n) } else { 0 };
            if n > 0 {
                self.lidx_host.clear();
                self.lw_host.clear();
                for (i, a) in alpha.iter() {
                    self.lidx_host.push(i as u32);
                    if self.wide {
                        self.lw_host.extend_from_slice(&a.to_le_bytes());
                    } else {
                        self.lw_host.extend_from_slice(&(a as f32).to_le_bytes());
                    }
                }
                let q = &self.ctx.queue;
                q.write_buffer(&self.lidx, 0, bytemuck::cast_slice(&self.lidx_host));
                q.write_buffer(&self.lw, 0, &self.lw_host);
                self.stats.bytes_up += 4 * self.lidx_host.len() as u64 + self.lw_host.len() as u64;
                let p = Params {
                    n: n as u32,
                    nwg: nwg2,
                    ..self.base_params()
                };
                let off = self.push_params(&p);
                let mut enc = self.take_encoder();
                passes::dispatch(&mut enc, &self.pipes.active, &self.active_bg, &[off], nwg2);
                self.stats.dispatches += 1;
                self.enc = Some(enc);
            }
            let p = Params {
                nwg: self.nwg_rows,
                nwg2,
                ..self.base_params()
            };
            let off = self.push_params(&p);
            let vbytes = 4 * self.gt;
            let mut enc = self.take_encoder();
            passes::dispatch(&mut enc, &self.pipes.fin, &self.final_bg, &[off], 1);
            self.stats.dispatches += 1;
            enc.copy_buffer_to_buffer(&self.res_v, 0, &self.staging, 0, vbytes);
            enc.copy_buffer_to_buffer(&self.res_i, 0, &self.staging, vbytes, 8);
            self.enc = Some(enc);
            self.submit_and_read(vbytes + 8)?;
            let idx = |k: usize| {
                let o = vbytes as usize + 4 * k;
                passes::read_u32(&self.readback, o)
            };
            let (s, v) = (idx(0), idx(1));
            let (s, g_s) = if s == NONE {
                (0, f64::NAN)
            } else {
                (s as usize, self.read_gt(0))
            };
            let (v, g_v) = if v == NONE || n == 0 {
                (usize::MAX, f64::NEG_INFINITY)
            } else {
                (v as usize, self.read_gt(1))
            };
            Ok(Reduction {
                s,
                g_s,
                v,
                g_v,
                alpha_g: if n > 0 { self.read_gt(2) } else { 0.0 },
                alpha_g_prev: if n > 0 && self.prev {
                    self.read_gt(3)
                } else {
                    0.0
                },
            })
        })();
        self.stats.call_ns[crate::backend::call::REDUCE] += t.elapsed().as_nanos() as u64;
        r
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<()> {
            if self.g_host_valid {
                for (o, &i) in out.iter_mut().zip(idx) {
                    *o = self.g_host[i];
                }
                return Ok(());
            }
            self.gather_from(0, 0, idx, out)
        })();
        self.stats.call_ns[crate::backend::call::GATHER] += t.elapsed().as_nanos() as u64;
        r
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let f = if self.prev { SRC_PREV } else { 0 };
        self.gather_from(f, 0, idx, out)
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let (slot, miss) = self.resolve(j, None);
        if miss {
            self.fresh = j;
        }
        self.gather_from(SRC_COL, slot, idx, out)
    }

    fn gather_fused(
        &mut self,
        idx: &[usize],
        g: &mut [f64],
        prev: Option<&mut [f64]>,
        col: Option<(usize, &mut [f64])>,
    ) -> Result<()> {
        let n = idx.len();
        let parts = 1 + prev.is_some() as usize + col.is_some() as usize;
        if n == 0 {
            return Ok(());
        }
        if (parts * n) as u64 * self.gt > self.out_bytes {
            self.gather(idx, g)?;
            if let Some(p) = prev {
                self.gather_prev(idx, p)?;
            }
            if let Some((j, q)) = col {
                self.column_entries(j, idx, q)?;
            }
            return Ok(());
        }
        let slot = match &col {
            Some((j, _)) => {
                let (slot, miss) = self.resolve(*j, None);
                if miss {
                    self.fresh = *j;
                }
                slot
            }
            None => 0,
        };
        self.upload_gather_indices(idx);
        // The sources in output order: g, then g⁻, then the column (no per-call list).
        let mut srcs = [(0u32, slot); 3];
        let mut used = 1;
        if prev.is_some() {
            srcs[used].0 = if self.prev { SRC_PREV } else { 0 };
            used += 1;
        }
        if col.is_some() {
            srcs[used].0 = SRC_COL;
            used += 1;
        }
        self.read_parts(n, srcs[..used].iter().copied())?;
        for (k, o) in g.iter_mut().enumerate().take(n) {
            *o = self.read_gt(k);
        }
        let mut part = 1;
        if let Some(p) = prev {
            for (k, o) in p.iter_mut().enumerate().take(n) {
                *o = self.read_gt(part * n + k);
            }
            part += 1;
        }
        if let Some((_, q)) = col {
            for (k, o) in q.iter_mut().enumerate().take(n) {
                *o = self.read_gt(part * n + k);
            }
        }
        Ok(())
    }

    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        Ok(self.prefetch(js))
    }

    /// One readback of all of g (kept on the host until a pass writes g: the working set's
    /// gathers that follow are served from it), the selection on the host.
    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<()> {
            if !self.wide
                && k > 0
                && self.prob.len() >= self.compact_min_rows
                && self.lowest_below(k, out)?
            {
                return Ok(());
            }
            self.read_gradient()?;
            let g = &self.g_host;
            let mut bound = self.lowest_bound;
            super::select_lowest_bounded_slice(g, k, &mut bound, out);
            self.lowest_bound = bound;
            Ok(())
        })();
        self.stats.call_ns[crate::backend::call::LOWEST] += t.elapsed().as_nanos() as u64;
        r
    }

    /// The columns of `w` in batched passes (the misses only), then g_W and Q[w, w] by
    /// gathers recorded into one submit and read back once (in a few when the block is
    /// larger than the gather buffer).
    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> Result<usize> {
        let t = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> Result<usize> {
            let n = w.len();
            let need = 2 * n + 2;
            if n == 0 || need > self.cache.capacity() {
                return super::block_by_columns(self, w, out, g_w);
            }
            let held = w.iter().filter(|&&j| self.cache.holds(j)).count();
            self.stats.cache_hits += held as u64;
            self.cache.ensure_usable(need);
            self.prefetch(w);
            let mut slots = std::mem::take(&mut self.slot_buf);
            slots.clear();
            for &j in w {
                let (slot, hit) = self.cache.get_or_assign(j, None);
                if !hit {
                    self.record_column(j, slot);
                    self.cache.mark_valid(slot);
                }
                slots.push(slot);
            }
            // One dispatch per readback where the whole cache is bound and the index list holds W
            // and its slots; otherwise one per column.
            let one_dispatch = self.gather_all_bg.is_some() && 2 * n <= self.prob.len();
            if one_dispatch {
                self.gidx_host.clear();
                self.gidx_host.extend(w.iter().map(|&i| i as u32));
                self.gidx_host.extend(slots.iter().map(|&s| s as u32));
                self.ctx
                    .queue
                    .write_buffer(&self.gidx, 0, bytemuck::cast_slice(&self.gidx_host));
                self.stats.bytes_up += 4 * self.gidx_host.len() as u64;
            } else {
                self.upload_gather_indices(w);
            }
            // Parts of n values: g_W, then the n columns; as many per readback as the buffer holds.
            let per_read = ((self.out_bytes / self.gt) as usize / n).max(1);
            let mut part = 0;
            while part <= n {
                let last = (part + per_read).min(n + 1);
                let src = |k: usize| {
                    if k == 0 {
                        (0, 0)
                    } else {
                        (SRC_COL, slots[k - 1])
                    }
                };
                if one_dispatch {
                    self.read_block_parts(n, part, last)?;
                } else {
                    self.read_parts(n, (part..last).map(src))?;
                }
                for k in part..last {
                    let dst = if k == 0 {
                        &mut g_w[..n]
                    } else {
                        &mut out[(k - 1) * n..k * n]
                    };
                    for (r, o) in dst.iter_mut().enumerate() {
                        *o = self.read_gt((k - part) * n + r);
                    }
                }
                part = last;
            }
            self.slot_buf = slots;
            Ok(held)
        })();
        self.stats.call_ns[crate::backend::call::BLOCK] += t.elapsed().as_nanos() as u64;
        r
    }

    fn column_capacity(&self) -> usize {
        self.cache.capacity()
    }

    fn stats(&self) -> BackendStats {
        BackendStats {
            bytes_up: self.stats.bytes_up + self.vector_bytes.get(),
            ..self.stats
        }
    }

    fn fill_marks(&mut self, mk: u8) -> Result<()> {
        self.marks_host.clear();
        self.marks_host.resize(self.prob.len(), mk as u32);
        if !self.marks_host.is_empty() {
            self.ctx
                .queue
                .write_buffer(&self.marks, 0, bytemuck::cast_slice(&self.marks_host));
            self.stats.bytes_up += 4 * self.marks_host.len() as u64;
        }
        Ok(())
    }

    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()> {
        if self.marks_host.len() != self.prob.len() {
            self.fill_marks(super::mark::NONE)?;
        }
        // The writes land before the next submit; no recorded pass reads the marks except a
        // marked reduction, which is submitted as soon as it is recorded.
        let q = &self.ctx.queue;
        for &(i, mk) in marks {
            self.marks_host[i] = mk as u32;
            q.write_buffer(
                &self.marks,
                4 * i as u64,
                bytemuck::bytes_of(&self.marks_host[i]),
            );
        }
        self.stats.bytes_up += 4 * marks.len() as u64;
        Ok(())
    }

    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction> {
        if self.marks_host.len() != self.prob.len() {
            return Ok(MarkedReduction::EMPTY);
        }
        let nwg = self.nwg_rows;
        let p = Params {
            nwg,
            scale: split(shift),
            ..self.base_params()
        };
        let off = self.push_params(&p);
        let vbytes = 3 * self.gt;
        let mut enc = self.take_encoder();
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&self.pipes.marked);
            pass.set_bind_group(0, &self.marked_bg, &[off]);
            pass.dispatch_workgroups(nwg, 1, 1);
            self.stats.dispatches += 1;
            pass.set_pipeline(&self.pipes.marked_final);
            pass.dispatch_workgroups(1, 1, 1);
            self.stats.dispatches += 1;
        }
        let o = 3 * nwg as u64;
        enc.copy_buffer_to_buffer(&self.mpart_v, o * self.gt, &self.staging, 0, vbytes);
        enc.copy_buffer_to_buffer(
            &self.mpart_i,
            o * 4,
            &self.staging,
            vbytes.next_multiple_of(4),
            12,
        );
        self.enc = Some(enc);
        let ioff = vbytes.next_multiple_of(4) as usize;
        self.submit_and_read(ioff as u64 + 12)?;
        let idx = |k: usize| {
            let o = ioff + 4 * k;
            match passes::read_u32(&self.readback, o) {
                NONE => usize::MAX,
                i => i as usize,
            }
        };
        let val = |k: usize, empty: f64| {
            if idx(k) == usize::MAX {
                empty
            } else {
                self.read_gt(k)
            }
        };
        Ok(MarkedReduction {
            low: (idx(0), val(0, f64::INFINITY)),
            mid: (idx(1), val(1, f64::INFINITY)),
            high: (idx(2), val(2, f64::NEG_INFINITY)),
        })
    }
}
