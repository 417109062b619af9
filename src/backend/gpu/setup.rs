//! Setting one problem up on the device, in three steps [`GpuBackend::with_data`] takes in
//! turn: the sizes of its buffers checked against the adapter's limits ([`Sizes`]), the
//! buffers ([`Buffers`]), and the bind groups of every pass over them ([`BindGroups`]). The
//! data rows themselves are uploaded (or bound, when shared) by [`super::data`].

use super::pipelines::{PARAMS_SIZE, Pipelines, TILE_COLUMNS};
use super::{GpuConfig, GpuContext, PARAM_SLOTS, QUERY_SLOTS, WG, bind_group, ceil_div};
use crate::backend::MAX_BLOCK;
use crate::backend::cpu::Precision;
use crate::error::{Error, Result};
use crate::problem::Problem;
use wgpu::util::DeviceExt;

/// The sizes of one problem's buffers and dispatches.
pub(super) struct Sizes {
    /// Points m.
    pub m: usize,
    /// Features d (at least 1) and d rounded up to a multiple of 4.
    pub d: usize,
    pub dpad: usize,
    /// Bytes of one gradient entry (4 or 8).
    pub gt: u64,
    /// The largest chunk of data rows one binding takes.
    pub chunk_limit: u64,
    /// Bytes of one cached column, and its slot's stride (aligned for dynamic offsets).
    pub col_bytes: u64,
    pub slot_stride: u64,
    /// Column-cache slots.
    pub slots: u64,
    /// Workgroups of the passes over all rows, and at most over a list.
    pub nwg_rows: u32,
    pub nwg_list_max: u32,
    /// Stride of one parameter slot in the uniform buffer.
    pub param_stride: u64,
    /// Bytes of the gather output (three m-vectors where a binding allows).
    pub out_bytes: u64,
    /// Columns the tile buffer holds (0: no tile buffer, the batched passes write into cache
    /// slots four at a time).
    pub tile_cols: usize,
    /// The whole cache fits one binding: the working set's block is gathered in one dispatch.
    pub whole_cache: bool,
    /// Bytes of the cache's buffer: the budget whatever the column length, so that the
    /// backends of a shrinking run's rounds (other rows, other slot strides) pass one buffer
    /// on instead of each allocating its own (on an H100, 40–70 ms for 2 GiB). Its first
    /// `slot_stride · slots` bytes hold the slots.
    pub cache_alloc: u64,
}

impl Sizes {
    /// The sizes for `prob` on `ctx`, or why the adapter cannot hold it.
    pub fn new(prob: &Problem<'_>, ctx: &GpuContext, cfg: GpuConfig) -> Result<Sizes> {
        let lim = &ctx.limits;
        let m = prob.len();
        let d = prob.data.n_features().max(1);
        let gt: u64 = if cfg.precision == Precision::F64 {
            8
        } else {
            4
        };
        let max_bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
        let chunk_limit = cfg
            .max_chunk_bytes
            .unwrap_or(max_bind)
            .min(max_bind)
            .max(16);
        let name = &ctx.adapter.name;
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        // Every m-vector must fit one binding.
        if m as u64 * gt > max_bind || m > u32::MAX as usize / 2 {
            return Err(Error::Backend(format!(
                "{m} points need {:.1} MiB per gradient vector, more than {name}'s largest storage binding ({:.1} MiB); use the CPU backend",
                mib(m as u64 * gt),
                mib(max_bind)
            )));
        }
        let align = lim.min_storage_buffer_offset_alignment.max(4) as u64;
        let col_bytes = (m as u64 * gt).max(16);
        let slot_stride = col_bytes.next_multiple_of(align);
        let by_budget = cfg.cache_bytes as u64 / slot_stride;
        let by_buffer = lim.max_buffer_size / slot_stride;
        // Dynamic offsets are u32: the last slot must start below 4 GiB.
        let by_offset = u32::MAX as u64 / slot_stride + 1;
        let slots = by_budget.max(2).min(by_buffer).min(by_offset).min(1 << 20);
        if slots < 2 {
            return Err(Error::Backend(format!(
                "two kernel columns of {m} points ({:.1} MiB) exceed {name}'s largest buffer ({:.1} MiB); use the CPU backend",
                mib(2 * slot_stride),
                mib(lim.max_buffer_size)
            )));
        }
        let software = ctx.is_software();
        let nwg_rows = if software {
            8u64.min(ceil_div(m as u64, WG)).max(1)
        } else {
            ceil_div(m as u64, WG).clamp(1, 1024)
        } as u32;
        let nwg_list_max: u32 = if software { 8 } else { 1024 };
        let param_stride =
            PARAMS_SIZE.next_multiple_of(lim.min_uniform_buffer_offset_alignment as u64);
        // Three gathers of one index list share it (PARTAN's g, g⁻ and column), and the
        // largest automatic working set's block comes back in one readback, up to a binding.
        let block = (MAX_BLOCK as u64 + 1) * MAX_BLOCK as u64;
        let out_bytes = (3 * m as u64 * gt)
            .max(block * gt)
            .min(max_bind / gt * gt)
            .min(lim.max_buffer_size.saturating_sub(64) / gt * gt)
            .max(m as u64 * gt);
        // As many columns as one binding (a chunk's bound) holds, up to the tiled pass's
        // sixteen; fewer than eight would not beat four-column passes into the slots.
        let tile_cols = (chunk_limit / (m as u64 * gt).max(1)).min(TILE_COLUMNS as u64) as usize;
        let tile_cols = if tile_cols >= 8 { tile_cols } else { 0 };
        Ok(Sizes {
            m,
            d,
            dpad: d.next_multiple_of(4),
            gt,
            chunk_limit,
            col_bytes,
            slot_stride,
            slots,
            nwg_rows,
            nwg_list_max,
            param_stride,
            out_bytes,
            tile_cols,
            whole_cache: slot_stride * slots <= max_bind && slot_stride.is_multiple_of(gt),
            cache_alloc: (cfg.cache_bytes as u64)
                .min(lim.max_buffer_size)
                .max(slot_stride * slots)
                .next_multiple_of(4),
        })
    }

    /// Bytes of the m-vectors and their partials (the memory plan's "vectors").
    pub fn vector_bytes(&self) -> u64 {
        let (m, gt) = (self.m as u64, self.gt);
        m * (6 * gt + 12)
            + (m * gt).max(64)
            + 2 * (self.out_bytes - m * gt)
            + self.tile_cols as u64 * m * gt
    }
}

/// The buffers of one problem (besides its data rows and their chunks).
pub(super) struct Buffers {
    pub norms: wgpu::Buffer,
    pub ylab: wgpu::Buffer,
    /// Query rows, then four words per query of the batched pass's scalars.
    pub query: wgpu::Buffer,
    pub params: wgpu::Buffer,
    pub cache: wgpu::Buffer,
    /// The tiled pass's output (`tile_cols` columns), copied into cache slots.
    pub tile: wgpu::Buffer,
    pub g: wgpu::Buffer,
    pub gp: wgpu::Buffer,
    pub pmin_v: wgpu::Buffer,
    pub pmin_i: wgpu::Buffer,
    pub pact_v: wgpu::Buffer,
    pub pact_i: wgpu::Buffer,
    pub lidx: wgpu::Buffer,
    pub lw: wgpu::Buffer,
    pub gidx: wgpu::Buffer,
    pub out: wgpu::Buffer,
    pub marks: wgpu::Buffer,
    pub mpart_v: wgpu::Buffer,
    pub mpart_i: wgpu::Buffer,
    pub res_v: wgpu::Buffer,
    pub res_i: wgpu::Buffer,
    pub staging: wgpu::Buffer,
    /// The update list (shaders/update_list.wgsl): (slot, coefficient hi, lo, 0) per column.
    pub ulist: wgpu::Buffer,
}

impl Buffers {
    /// Creates them on `dev` (norms and labels filled, the rest zeroed); the cache is `reuse`
    /// where it is a cache buffer of this size (a previous backend's, its contents stale).
    pub fn new(
        dev: &wgpu::Device,
        prob: &Problem<'_>,
        wide: bool,
        z: &Sizes,
        reuse: Option<wgpu::Buffer>,
    ) -> Buffers {
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let init = |label: &str, bytes: &[u8], usage: wgpu::BufferUsages| {
            let mut v = bytes.to_vec();
            v.resize(v.len().max(16).next_multiple_of(4), 0);
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &v,
                usage,
            })
        };
        let zeroed = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16).next_multiple_of(4),
                usage,
                mapped_at_creation: false,
            })
        };
        let norms = if wide {
            init("norms", bytemuck::cast_slice(&prob.norms), storage)
        } else {
            let n32: Vec<f32> = prob.norms.iter().map(|&v| v as f32).collect();
            init("norms", bytemuck::cast_slice(&n32), storage)
        };
        // Signed costs (common.wgsl's `label_of`, `row_inv_c`): y_i times the row's weight.
        let y32: Vec<f32> = (0..prob.len())
            .map(|i| (prob.y[i] * prob.row_weight(i)) as f32)
            .collect();
        let (m, gt) = (z.m as u64, z.gt);
        let rw = storage | wgpu::BufferUsages::COPY_SRC;
        let (nwg_rows, nwg_list_max) = (z.nwg_rows as u64, z.nwg_list_max as u64);
        Buffers {
            norms,
            ylab: init("y", bytemuck::cast_slice(&y32), storage),
            query: zeroed("query", (QUERY_SLOTS * (z.dpad + 4) * 4) as u64, storage),
            params: zeroed(
                "params",
                z.param_stride * PARAM_SLOTS as u64,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            ),
            cache: reuse
                .filter(|b| b.size() == z.cache_alloc && b.usage() == storage)
                .unwrap_or_else(|| zeroed("column cache", z.cache_alloc, storage)),
            tile: zeroed(
                "column tile",
                z.tile_cols as u64 * m * gt,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            g: zeroed("g", m * gt, rw),
            gp: zeroed("g_prev", m * gt, rw),
            pmin_v: zeroed("argmin partials", nwg_rows * gt, rw),
            pmin_i: zeroed("argmin partial indices", nwg_rows * 4, rw),
            pact_v: zeroed("active partials", 3 * nwg_list_max * gt, rw),
            pact_i: zeroed("active partial indices", nwg_list_max * 4, rw),
            lidx: zeroed("active indices", m * 4, storage),
            lw: zeroed("active weights", m * gt, storage),
            gidx: zeroed("gather indices", m * 4, storage),
            out: zeroed("gather output", z.out_bytes, rw),
            marks: zeroed("marks", m * 4, storage),
            mpart_v: zeroed("marked partials", 3 * (nwg_rows + 1) * gt, rw),
            mpart_i: zeroed("marked partial indices", 3 * (nwg_rows + 1) * 4, rw),
            res_v: zeroed("result values", 4 * gt, rw),
            res_i: zeroed("result indices", 16, rw),
            staging: zeroed(
                "readback",
                z.out_bytes.max(64) + 64,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            ulist: zeroed("update list", 16 * super::UPDATE_LIST_MAX as u64, storage),
        }
    }
}

/// The bind group of every pass but the per-chunk column passes.
pub(super) struct BindGroups {
    pub column: wgpu::BindGroup,
    pub batch: Option<wgpu::BindGroup>,
    pub tile: Option<wgpu::BindGroup>,
    pub update: wgpu::BindGroup,
    pub active: wgpu::BindGroup,
    /// The final reduction's.
    pub last: wgpu::BindGroup,
    pub gather: wgpu::BindGroup,
    /// The gather with the whole cache bound (where it fits one binding).
    pub gather_all: Option<wgpu::BindGroup>,
    /// The update by a list of cached columns (where the cache fits one binding).
    pub update_list: Option<wgpu::BindGroup>,
    /// The compaction of the working set's candidates into the gather output.
    pub below: wgpu::BindGroup,
    pub marked: wgpu::BindGroup,
}

impl BindGroups {
    /// Binds the buffers `b` to the pipelines' layouts.
    pub fn new(dev: &wgpu::Device, pipes: &Pipelines, b: &Buffers, z: &Sizes) -> BindGroups {
        let k = Binder { dev, b, z };
        let (column, batch, tile) = k.columns(pipes);
        let (update, active, last) = k.reductions(pipes);
        let (gather, gather_all, below, marked) = k.gathers(pipes);
        let update_list = k.update_list(pipes);
        BindGroups {
            column,
            batch,
            tile,
            update,
            active,
            last,
            gather,
            gather_all,
            update_list,
            below,
            marked,
        }
    }
}

/// What the bind groups are made from: the device, the buffers and their sizes.
struct Binder<'a> {
    dev: &'a wgpu::Device,
    b: &'a Buffers,
    z: &'a Sizes,
}

impl<'a> Binder<'a> {
    /// The Params block at `n` (one slot, selected by a dynamic offset).
    fn params(&self) -> wgpu::BindingResource<'a> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.b.params,
            offset: 0,
            size: wgpu::BufferSize::new(PARAMS_SIZE),
        })
    }

    /// One cache slot (a column, selected by a dynamic offset).
    fn slot(&self) -> wgpu::BindingResource<'a> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.b.cache,
            offset: 0,
            size: wgpu::BufferSize::new(self.z.col_bytes),
        })
    }

    fn group(
        &self,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        resources: &[wgpu::BindingResource],
    ) -> wgpu::BindGroup {
        bind_group(self.dev, label, layout, resources)
    }

    /// The bind groups of columns.
    fn columns(
        &self,
        pipes: &Pipelines,
    ) -> (
        wgpu::BindGroup,
        Option<wgpu::BindGroup>,
        Option<wgpu::BindGroup>,
    ) {
        let column = self.group(
            "column",
            &pipes.column_bgl,
            &[
                self.params(),
                self.b.norms.as_entire_binding(),
                self.b.ylab.as_entire_binding(),
                self.b.query.as_entire_binding(),
                self.slot(),
            ],
        );
        let batch = pipes.batch.as_ref().map(|p| {
            self.group(
                "column batch",
                &p.bgl,
                &[
                    self.params(),
                    self.b.norms.as_entire_binding(),
                    self.b.ylab.as_entire_binding(),
                    self.b.query.as_entire_binding(),
                    self.slot(),
                    self.slot(),
                    self.slot(),
                    self.slot(),
                ],
            )
        });
        let tile = pipes
            .tile
            .as_ref()
            .filter(|_| self.z.tile_cols > 0)
            .map(|p| {
                self.group(
                    "column tile",
                    &p.bgl,
                    &[
                        self.params(),
                        self.b.norms.as_entire_binding(),
                        self.b.ylab.as_entire_binding(),
                        self.b.query.as_entire_binding(),
                        self.b.tile.as_entire_binding(),
                    ],
                )
            });
        (column, batch, tile)
    }

    /// The bind groups of reductions.
    fn reductions(&self, pipes: &Pipelines) -> (wgpu::BindGroup, wgpu::BindGroup, wgpu::BindGroup) {
        let update = self.group(
            "update",
            &pipes.update_bgl,
            &[
                self.params(),
                self.slot(),
                self.slot(),
                self.b.g.as_entire_binding(),
                self.b.gp.as_entire_binding(),
                self.b.pmin_v.as_entire_binding(),
                self.b.pmin_i.as_entire_binding(),
                self.slot(),
                self.slot(),
            ],
        );
        let active = self.group(
            "active",
            &pipes.active_bgl,
            &[
                self.params(),
                self.b.g.as_entire_binding(),
                self.b.gp.as_entire_binding(),
                self.b.lidx.as_entire_binding(),
                self.b.lw.as_entire_binding(),
                self.b.pact_v.as_entire_binding(),
                self.b.pact_i.as_entire_binding(),
            ],
        );
        let last = self.group(
            "final",
            &pipes.final_bgl,
            &[
                self.params(),
                self.b.pmin_v.as_entire_binding(),
                self.b.pmin_i.as_entire_binding(),
                self.b.pact_v.as_entire_binding(),
                self.b.pact_i.as_entire_binding(),
                self.b.res_v.as_entire_binding(),
                self.b.res_i.as_entire_binding(),
            ],
        );
        (update, active, last)
    }

    /// The cache's slots, all of them, as one binding.
    fn whole_cache(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.b.cache,
            offset: 0,
            size: std::num::NonZeroU64::new(self.z.slot_stride * self.z.slots),
        })
    }

    /// The bind group of the update by a list, with the whole cache bound, where it fits one
    /// binding.
    fn update_list(&self, pipes: &Pipelines) -> Option<wgpu::BindGroup> {
        self.z.whole_cache.then(|| {
            let all = self.whole_cache();
            self.group(
                "update list",
                &pipes.update_list_bgl,
                &[
                    self.params(),
                    all,
                    self.b.g.as_entire_binding(),
                    self.b.ulist.as_entire_binding(),
                    self.b.pmin_v.as_entire_binding(),
                    self.b.pmin_i.as_entire_binding(),
                ],
            )
        })
    }

    /// The bind groups of gathers.
    fn gathers(
        &self,
        pipes: &Pipelines,
    ) -> (
        wgpu::BindGroup,
        Option<wgpu::BindGroup>,
        wgpu::BindGroup,
        wgpu::BindGroup,
    ) {
        let gather = self.group(
            "gather",
            &pipes.gather_bgl,
            &[
                self.params(),
                self.b.g.as_entire_binding(),
                self.b.gp.as_entire_binding(),
                self.slot(),
                self.b.gidx.as_entire_binding(),
                self.b.out.as_entire_binding(),
            ],
        );
        let gather_all = self.z.whole_cache.then(|| {
            let all = self.whole_cache();
            self.group(
                "block gather",
                &pipes.gather_bgl,
                &[
                    self.params(),
                    self.b.g.as_entire_binding(),
                    self.b.gp.as_entire_binding(),
                    all,
                    self.b.gidx.as_entire_binding(),
                    self.b.out.as_entire_binding(),
                ],
            )
        });
        let below = self.group(
            "below",
            &pipes.below_bgl,
            &[
                self.params(),
                self.b.g.as_entire_binding(),
                self.b.out.as_entire_binding(),
            ],
        );
        let marked = self.group(
            "marked",
            &pipes.marked_bgl,
            &[
                self.params(),
                self.b.g.as_entire_binding(),
                self.b.ylab.as_entire_binding(),
                self.b.marks.as_entire_binding(),
                self.b.mpart_v.as_entire_binding(),
                self.b.mpart_i.as_entire_binding(),
            ],
        );
        (gather, gather_all, below, marked)
    }
}
