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

mod backend;
pub mod block;
pub mod context;
pub mod data;
mod passes;
pub mod pipelines;
mod prefetch;
mod resident;
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
    /// Rows from which the working set's candidates (`Columns::lowest`) are compacted on the
    /// device instead of reading all of g back (f32 gradients); tests lower it.
    pub compact_min_rows: usize,
    /// Where the working-set solver's outer iterations run (`--gpu-loop`).
    pub loop_place: crate::backend::LoopPlace,
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
            loop_place: crate::backend::LoopPlace::Auto,
        }
    }
}

/// The working-set solver's smallest automatic q on a hardware adapter
/// ([`crate::backend::Hints::ws_floor`]): an outer iteration there waits for two round trips, and its q
/// columns cost far less, so fewer, larger blocks pay; of q = 64 to 1024, 256 trained a9a and
/// KDD99 fastest on an H100 (docs/BENCHMARKS.md, "H100, 2026-11-27, commits 969c614 →
/// 0d6eedd"). A software adapter asks for none (0).
pub const WS_FLOOR: usize = 256;

/// Columns one update-by-list pass takes (shaders/update_list.wgsl): the largest automatic
/// working set.
pub const UPDATE_LIST_MAX: usize = super::MAX_BLOCK;

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
    /// The update by a list of cached columns ([`Columns::update_many`](crate::backend::Columns::update_many)), where the cache fits
    /// one binding; its list buffer, the list's host copy, and whether a list was written
    /// since the last submit (the next must wait for it).
    update_list_bg: Option<wgpu::BindGroup>,
    ulist: wgpu::Buffer,
    ulist_host: Vec<[u32; 4]>,
    ulist_pending: bool,
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
    /// g as last read back whole ([`Columns::lowest`](crate::backend::Columns::lowest)), while no pass has written g since:
    /// gathers are then served from it without a round trip.
    g_host: Vec<f64>,
    g_host_valid: bool,
    /// (k, the 2k-th smallest g) of the last `lowest`: the next call's filter.
    lowest_bound: (usize, f64),
    /// The parallel selections' per-chunk lists.
    select_lists: crate::backend::ChunkLists,
    /// The working set's selection read back with the reduction (see `prefetch.rs`).
    pre: prefetch::Prefetch,
    /// The working set's cache slots ([`Columns::block`](crate::backend::Columns::block); reused).
    slot_buf: Vec<usize>,
    fresh: usize,
    stats: BackendStats,
    plan: MemoryPlan,
    /// Points held for their columns only ([`Guests::add_guest`](crate::backend::Guests::add_guest): a distributed run's
    /// vertices of other ranks): column m + k is guest k's.
    guests: Vec<Guest>,
    /// Labels and norms (the device loop binds them).
    ylab: wgpu::Buffer,
    norms: wgpu::Buffer,
    /// The working-set loop on the device: wanted here, and its state once set up.
    loop_on: bool,
    resident: Option<resident::Resident>,
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

/// What [`GpuBackend::allocate`] made on the device for one backend.
/// The column cache's memory one backend hands the next ([`Columns::export_columns`](crate::backend::Columns::export_columns)).
struct CacheMemory(wgpu::Buffer);

struct Made {
    wide: bool,
    pipes: Arc<Pipelines>,
    z: setup::Sizes,
    b: setup::Buffers,
    data: Arc<GpuData>,
    chunks: Vec<Chunk>,
    bg: setup::BindGroups,
    plan: MemoryPlan,
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
        Self::with_data_reusing(prob, ctx, cfg, shared, None)
    }

    /// As [`GpuBackend::with_data`], taking the column cache's memory from `memory` — what
    /// a backend on the same adapter gave up ([`Columns::export_columns`](crate::backend::Columns::export_columns)) — where it has the
    /// size this backend's cache needs.
    pub fn with_data_reusing(
        prob: &'a Problem<'a>,
        ctx: &'a GpuContext,
        cfg: GpuConfig,
        shared: Option<(&Arc<GpuData>, Option<&[usize]>)>,
        memory: Option<crate::backend::ColumnExport>,
    ) -> Result<Self> {
        let start = std::time::Instant::now();
        let reuse = memory
            .and_then(|m| m.0.downcast::<CacheMemory>().ok())
            .map(|c| c.0);
        let made = Self::allocate(prob, ctx, cfg, shared, reuse)?;
        let mut be = Self::assemble(prob, ctx, cfg, made);
        be.stats.call_ns[crate::backend::stats::call::SETUP] = start.elapsed().as_nanos() as u64;
        Ok(be)
    }

    /// The device side of [`with_data`](Self::with_data): the pipelines, buffers, data chunks
    /// and bind groups, or why the adapter cannot hold them.
    fn allocate(
        prob: &'a Problem<'a>,
        ctx: &'a GpuContext,
        cfg: GpuConfig,
        shared: Option<(&Arc<GpuData>, Option<&[usize]>)>,
        reuse: Option<wgpu::Buffer>,
    ) -> Result<Made> {
        // The label buffer holds y_i times the row's weight in f32 (common.wgsl's `label_of`).
        if prob.has_row_weights()
            && let Some(i) = (0..prob.len()).find(|&i| !(prob.row_weight(i) as f32).is_normal())
        {
            return Err(Error::Backend(format!(
                "a row weight of {:e} is outside the f32 range the GPU keeps row weights in; use the CPU backend",
                prob.row_weight(i)
            )));
        }
        let wide = cfg.precision == Precision::F64;
        let pipes = ctx.pipelines(wide)?;
        let dev = &ctx.device;
        let ds = prob.data;
        let z = setup::Sizes::new(prob, ctx, cfg)?;
        let software = ctx.is_software();
        let scope = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let vscope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let b = setup::Buffers::new(dev, prob, wide, &z, reuse);
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
                "{} could not hold the problem ({:.1} MiB data + {:.1} MiB vectors + {:.1} MiB column cache; a smaller cache or the CPU backend): {e}",
                ctx.adapter.name,
                mib(plan.data_bytes),
                mib(plan.vector_bytes),
                mib(plan.cache_bytes)
            )));
        }
        ctx.check("upload")?;
        Ok(Made {
            wide,
            pipes,
            z,
            b,
            data,
            chunks,
            bg,
            plan,
        })
    }

    /// The backend over what [`allocate`](Self::allocate) made, its host state empty.
    fn assemble(prob: &'a Problem<'a>, ctx: &'a GpuContext, cfg: GpuConfig, made: Made) -> Self {
        let Made {
            wide,
            pipes,
            z,
            b,
            data,
            chunks,
            bg,
            plan,
        } = made;
        let ds = prob.data;
        let m = z.m;
        let (kind, degree, gamma, coef0) = kernel_params(prob.kernel);
        GpuBackend {
            prob,
            ctx,
            _data: data,
            pipes,
            wide,
            compact_min_rows: cfg.compact_min_rows,
            gt: z.gt,
            dense: ds.is_dense(),
            d: z.d,
            dpad: z.dpad,
            kind,
            degree,
            gamma,
            coef0,
            inv_c: prob.inv_c_by_class(),
            chunks,
            params: b.params,
            param_stride: z.param_stride,
            query: b.query,
            g: b.g,
            gp: b.gp,
            lidx: b.lidx,
            lw: b.lw,
            gidx: b.gidx,
            out: b.out,
            out_bytes: z.out_bytes,
            res_v: b.res_v,
            res_i: b.res_i,
            staging: b.staging,
            column_bg: bg.column,
            batch_bg: bg.batch,
            tile_cols: if bg.tile.is_some() { z.tile_cols } else { 0 },
            tile_bg: bg.tile,
            tile: b.tile,
            cache_buf: b.cache,
            meta_dirty: false,
            update_bg: bg.update,
            active_bg: bg.active,
            final_bg: bg.last,
            gather_bg: bg.gather,
            gather_all_bg: bg.gather_all,
            update_list_bg: bg.update_list,
            ulist: b.ulist,
            ulist_host: Vec::new(),
            ulist_pending: false,
            below_bg: bg.below,
            marks: b.marks,
            mpart_v: b.mpart_v,
            mpart_i: b.mpart_i,
            marked_bg: bg.marked,
            marks_host: Vec::new(),
            slot_stride: z.slot_stride,
            nwg_rows: z.nwg_rows,
            nwg_list_max: z.nwg_list_max,
            cache: ColumnCache::with_slots(m, z.slots as usize),
            enc: None,
            param_host: vec![0u8; z.param_stride as usize * PARAM_SLOTS],
            n_params: 0,
            query_host: vec![0f32; QUERY_SLOTS * (z.dpad + 4)],
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
            select_lists: Default::default(),
            pre: Default::default(),
            slot_buf: Vec::new(),
            guests: Vec::new(),
            fresh: usize::MAX,
            stats: BackendStats::default(),
            plan,
            ylab: b.ylab,
            norms: b.norms,
            loop_on: cfg.loop_place.on_device(ctx.is_software()),
            resident: None,
        }
    }

    /// What was allocated on the device.
    pub fn memory_plan(&self) -> MemoryPlan {
        self.plan
    }
}

/// A bind group of `layout` whose binding k is `resources[k]`: the resources are listed in
/// the order of the layout's table (`pipelines::table`), so no binding index is written out
/// again (wgpu checks the group against the layout when it is made).
fn bind_group(
    dev: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    resources: &[wgpu::BindingResource],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = resources
        .iter()
        .enumerate()
        .map(|(k, r)| wgpu::BindGroupEntry {
            binding: k as u32,
            resource: r.clone(),
        })
        .collect();
    dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}
