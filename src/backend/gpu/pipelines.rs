//! The WGSL sources (embedded from `shaders/` at compile time), their composition for the f32
//! or f64 gradient, and the bind-group layouts and compute pipelines built once per device.

/// shaders/common.wgsl
pub const COMMON: &str = include_str!("../../../shaders/common.wgsl");
/// shaders/column.wgsl
pub const COLUMN: &str = include_str!("../../../shaders/column.wgsl");
/// shaders/column_dense.wgsl
pub const COLUMN_DENSE: &str = include_str!("../../../shaders/column_dense.wgsl");
/// shaders/column_csr.wgsl
pub const COLUMN_CSR: &str = include_str!("../../../shaders/column_csr.wgsl");
/// shaders/kernel.wgsl
pub const KERNEL: &str = include_str!("../../../shaders/kernel.wgsl");
/// shaders/column_batch.wgsl
pub const COLUMN_BATCH: &str = include_str!("../../../shaders/column_batch.wgsl");
/// shaders/column_batch_dense.wgsl
pub const COLUMN_BATCH_DENSE: &str = include_str!("../../../shaders/column_batch_dense.wgsl");
/// shaders/column_batch_csr.wgsl
pub const COLUMN_BATCH_CSR: &str = include_str!("../../../shaders/column_batch_csr.wgsl");
/// shaders/column_batch_slots.wgsl
pub const COLUMN_BATCH_SLOTS: &str = include_str!("../../../shaders/column_batch_slots.wgsl");
/// shaders/column_batch_tile.wgsl
pub const COLUMN_BATCH_TILE: &str = include_str!("../../../shaders/column_batch_tile.wgsl");
/// Columns of one batched pass into cache slots (shaders/column_batch_slots.wgsl's BK).
pub const BATCH_COLUMNS: usize = 4;
/// Columns of one batched pass into the tile buffer (shaders/column_batch_tile.wgsl's BK).
pub const TILE_COLUMNS: usize = 16;
/// shaders/update.wgsl
pub const UPDATE: &str = include_str!("../../../shaders/update.wgsl");
/// shaders/update_list.wgsl
pub const UPDATE_LIST: &str = include_str!("../../../shaders/update_list.wgsl");
/// shaders/partials.wgsl
pub const PARTIALS: &str = include_str!("../../../shaders/partials.wgsl");
/// shaders/active.wgsl
pub const ACTIVE: &str = include_str!("../../../shaders/active.wgsl");
/// shaders/final.wgsl
pub const FINAL: &str = include_str!("../../../shaders/final.wgsl");
/// shaders/gather.wgsl
pub const GATHER: &str = include_str!("../../../shaders/gather.wgsl");
/// shaders/below.wgsl
pub const BELOW: &str = include_str!("../../../shaders/below.wgsl");
/// shaders/marked_common.wgsl
pub const MARKED_COMMON: &str = include_str!("../../../shaders/marked_common.wgsl");
/// shaders/marked.wgsl
pub const MARKED: &str = include_str!("../../../shaders/marked.wgsl");
/// shaders/marked_final.wgsl
pub const MARKED_FINAL: &str = include_str!("../../../shaders/marked_final.wgsl");
/// shaders/block.wgsl
pub const BLOCK: &str = include_str!("../../../shaders/block.wgsl");
/// shaders/exp_f64.wgsl
pub const EXP_F64: &str = include_str!("../../../shaders/exp_f64.wgsl");
/// tanh from exp_gt (the sigmoid kernel), beside exp_gt wherever kernels are evaluated.
pub const TANH: &str = include_str!("../../../shaders/tanh.wgsl");

/// The shader programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// Kernel column over a dense chunk.
    ColumnDense,
    /// Kernel column over a CSR chunk.
    ColumnCsr,
    /// Up to four kernel columns over a dense chunk.
    ColumnBatchDense,
    /// Up to four kernel columns over a CSR chunk.
    ColumnBatchCsr,
    /// Up to sixteen kernel columns over a dense chunk, into the tile buffer.
    ColumnTileDense,
    /// Up to sixteen kernel columns over a CSR chunk, into the tile buffer.
    ColumnTileCsr,
    /// Fused gradient update + argmin partials.
    Update,
    /// The gradient update by a list of cached columns + argmin partials.
    UpdateList,
    /// Active-set partials.
    Active,
    /// Final combine.
    Final,
    /// Gather.
    Gather,
    /// The rows with g at or below a bound, compacted (the working set's candidates).
    Below,
    /// Marked reduction, first stage.
    Marked,
    /// Marked reduction, combine.
    MarkedFinal,
    /// Kernel blocks of the sampled iterations (entry points `per_row`, `per_thread`).
    Block,
}

impl Program {
    /// Every program.
    pub const ALL: [Program; 15] = [
        Program::ColumnDense,
        Program::ColumnCsr,
        Program::ColumnBatchDense,
        Program::ColumnBatchCsr,
        Program::ColumnTileDense,
        Program::ColumnTileCsr,
        Program::Update,
        Program::UpdateList,
        Program::Active,
        Program::Final,
        Program::Gather,
        Program::Below,
        Program::Marked,
        Program::MarkedFinal,
        Program::Block,
    ];
}

/// exp_gt for the f32 kernel arithmetic.
const EXP_F32: &str = "fn exp_gt(x: f32) -> f32 {\n    return exp(x);\n}\n";

/// The start of every program that evaluates kernels: GT, common.wgsl, exp_gt, tanh and
/// kernel.wgsl.
pub fn kernel_prelude(wide: bool) -> String {
    let mut s = String::from(if wide {
        "alias GT = f64;\n"
    } else {
        "alias GT = f32;\n"
    });
    s.push_str(COMMON);
    s.push_str(if wide { EXP_F64 } else { EXP_F32 });
    s.push_str(TANH);
    s.push_str(KERNEL);
    s
}

/// The full WGSL text of a program for the f32 (`wide` = false) or f64 gradient.
pub fn source(prog: Program, wide: bool) -> String {
    let mut s = String::from(if wide {
        "alias GT = f64;\n"
    } else {
        "alias GT = f32;\n"
    });
    s.push_str(COMMON);
    if matches!(
        prog,
        Program::ColumnDense
            | Program::ColumnCsr
            | Program::ColumnBatchDense
            | Program::ColumnBatchCsr
            | Program::ColumnTileDense
            | Program::ColumnTileCsr
            | Program::Block
    ) {
        s.push_str(if wide { EXP_F64 } else { EXP_F32 });
        s.push_str(TANH);
    }
    match prog {
        Program::ColumnDense => {
            s.push_str(KERNEL);
            s.push_str(COLUMN);
            s.push_str(COLUMN_DENSE);
        }
        Program::ColumnCsr => {
            s.push_str(KERNEL);
            s.push_str(COLUMN);
            s.push_str(COLUMN_CSR);
        }
        Program::ColumnBatchDense
        | Program::ColumnBatchCsr
        | Program::ColumnTileDense
        | Program::ColumnTileCsr => {
            let tile = matches!(prog, Program::ColumnTileDense | Program::ColumnTileCsr);
            let dense = matches!(prog, Program::ColumnBatchDense | Program::ColumnTileDense);
            s.push_str(KERNEL);
            s.push_str(if tile {
                COLUMN_BATCH_TILE
            } else {
                COLUMN_BATCH_SLOTS
            });
            s.push_str(COLUMN_BATCH);
            s.push_str(if dense {
                COLUMN_BATCH_DENSE
            } else {
                COLUMN_BATCH_CSR
            });
        }
        Program::Update => {
            s.push_str(PARTIALS);
            s.push_str(UPDATE);
        }
        Program::UpdateList => {
            s.push_str(PARTIALS);
            s.push_str(UPDATE_LIST);
        }
        Program::Active => s.push_str(ACTIVE),
        Program::Final => s.push_str(FINAL),
        Program::Gather => s.push_str(GATHER),
        Program::Below => s.push_str(BELOW),
        Program::Marked => {
            s.push_str(MARKED_COMMON);
            s.push_str(MARKED);
        }
        Program::MarkedFinal => {
            s.push_str(MARKED_COMMON);
            s.push_str(MARKED_FINAL);
        }
        Program::Block => s.push_str(BLOCK),
    }
    s
}

/// Size of the Params uniform block (must match shaders/common.wgsl).
pub const PARAMS_SIZE: u64 = std::mem::size_of::<Params>() as u64;

/// shaders/common.wgsl's `Params`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub m: u32,
    pub n: u32,
    pub d: u32,
    pub j: u32,
    pub kind: u32,
    pub degree: u32,
    pub flags: u32,
    pub nwg: u32,
    pub nwg2: u32,
    pub q_off: u32,
    pub out_off: u32,
    pub pad1: u32,
    pub gamma: [f32; 2],
    pub coef0: [f32; 2],
    pub inv_c: [f32; 2],
    pub normj: [f32; 2],
    pub yj: f32,
    pub pad2: f32,
    /// 1/C of the −1 rows (`inv_c`: of the +1 rows).
    pub inv_c_neg: [f32; 2],
    pub scale: [f32; 2],
    pub ca: [f32; 2],
    pub cb: [f32; 2],
    pub cp: [f32; 2],
    /// The update's third and fourth columns' factors (F_COL_C, F_COL_D).
    pub cc: [f32; 2],
    pub cd: [f32; 2],
}

/// The shaders' kernel parameters: (kind: 0 linear, 1 rbf, 2 polynomial, 3 sigmoid; degree; γ;
/// coef0).
pub fn kernel_params(k: crate::kernel::Kernel) -> (u32, u32, f64, f64) {
    use crate::kernel::Kernel;
    match k {
        Kernel::Linear => (0, 1, 0.0, 0.0),
        Kernel::Rbf { gamma } => (1, 1, gamma, 0.0),
        Kernel::Poly {
            gamma,
            coef0,
            degree,
        } => (2, degree, gamma, coef0),
        Kernel::Sigmoid { gamma, coef0 } => (3, 1, gamma, coef0),
    }
}

/// An f64 as the (hi, lo) pair of f32 the shaders add back together.
pub fn split(x: f64) -> [f32; 2] {
    let hi = x as f32;
    [hi, (x - hi as f64) as f32]
}

pub const F_COL_A: u32 = 1;
pub const F_COL_B: u32 = 2;
pub const F_PREV: u32 = 4;
pub const F_ROTATE: u32 = 8;
pub const F_WRITE: u32 = 16;
pub const SRC_PREV: u32 = 32;
pub const SRC_COL: u32 = 64;
/// column: an external query row (j = none): k(x_i, z) without Q's +1.
pub const F_NO_BIAS: u32 = 128;
/// update: the third and fourth columns.
pub const F_COL_C: u32 = 256;
/// See [`F_COL_C`].
pub const F_COL_D: u32 = 512;
/// gather: g_W and the block Q[W, W] in one dispatch, from the whole cache (gather.wgsl).
pub const SRC_BLOCK: u32 = 1024;

/// Per-chunk uniform of column.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ChunkInfo {
    /// First problem row of the chunk.
    pub r0: u32,
    /// Problem rows in the chunk.
    pub n: u32,
    /// Workgroups dispatched.
    pub nwg: u32,
    /// Rows stored in the chunk (the dense layout's feature stride).
    pub stride: u32,
    /// 1: problem row li is the chunk's row map\[li\]; 0: row li.
    pub mapped: u32,
    pub pad0: u32,
    pub pad1: u32,
    pub pad2: u32,
}

/// Layouts and pipelines of one gradient precision.
pub struct Pipelines {
    pub column_bgl: wgpu::BindGroupLayout,
    pub dense_bgl: wgpu::BindGroupLayout,
    pub csr_bgl: wgpu::BindGroupLayout,
    pub update_bgl: wgpu::BindGroupLayout,
    pub update_list_bgl: wgpu::BindGroupLayout,
    pub active_bgl: wgpu::BindGroupLayout,
    pub final_bgl: wgpu::BindGroupLayout,
    pub gather_bgl: wgpu::BindGroupLayout,
    pub below_bgl: wgpu::BindGroupLayout,
    pub marked_bgl: wgpu::BindGroupLayout,
    pub block_bgl: wgpu::BindGroupLayout,
    pub block_row: wgpu::ComputePipeline,
    pub block_thread: wgpu::ComputePipeline,
    pub marked: wgpu::ComputePipeline,
    pub marked_final: wgpu::ComputePipeline,
    pub column_dense: wgpu::ComputePipeline,
    pub column_csr: wgpu::ComputePipeline,
    /// The batched column pass, where the adapter allows its bindings (four writable cache
    /// slots beside the data: up to 11 storage buffers, 4 of them with dynamic offsets).
    pub batch: Option<Batch>,
    /// The batched pass into the tile buffer (sixteen columns; up to 8 storage buffers).
    pub tile: Option<Batch>,
    pub update: wgpu::ComputePipeline,
    pub update_list: wgpu::ComputePipeline,
    pub active: wgpu::ComputePipeline,
    pub fin: wgpu::ComputePipeline,
    pub gather: wgpu::ComputePipeline,
    pub below: wgpu::ComputePipeline,
}

/// The batched column pass's layout and pipelines.
pub struct Batch {
    pub bgl: wgpu::BindGroupLayout,
    pub dense: wgpu::ComputePipeline,
    pub csr: wgpu::ComputePipeline,
}

/// Binding kinds of a layout entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum B {
    /// Uniform with a dynamic offset (the Params ring).
    ParamsDyn,
    /// Plain uniform.
    Uniform,
    /// Read-only storage.
    Ro,
    /// Read-only storage with a dynamic offset (a cache slot).
    RoDyn,
    /// Read-write storage.
    Rw,
    /// Read-write storage with a dynamic offset.
    RwDyn,
}

/// The bindings of every layout, in binding order: the one table the pipelines' layouts are
/// made from ([`Pipelines::new`]) and that a test checks every program's WGSL declarations
/// against ([`Program::layouts`]).
mod table {
    use super::B::{self, *};
    pub const COLUMN: &[B] = &[ParamsDyn, Ro, Ro, Ro, RwDyn];
    pub const DENSE: &[B] = &[Uniform, Ro, Ro];
    pub const CSR: &[B] = &[Uniform, Ro, Ro, Ro, Ro];
    pub const BATCH: &[B] = &[ParamsDyn, Ro, Ro, Ro, RwDyn, RwDyn, RwDyn, RwDyn];
    pub const TILE: &[B] = &[ParamsDyn, Ro, Ro, Ro, Rw];
    pub const UPDATE: &[B] = &[ParamsDyn, RoDyn, RoDyn, Rw, Rw, Rw, Rw, RoDyn, RoDyn];
    pub const UPDATE_LIST: &[B] = &[ParamsDyn, Ro, Rw, Ro, Rw, Rw];
    pub const ACTIVE: &[B] = &[ParamsDyn, Ro, Ro, Ro, Ro, Rw, Rw];
    pub const FINAL: &[B] = &[ParamsDyn, Ro, Ro, Ro, Ro, Rw, Rw];
    pub const GATHER: &[B] = &[ParamsDyn, Ro, Ro, RoDyn, Ro, Rw];
    pub const BELOW: &[B] = &[ParamsDyn, Ro, Rw];
    pub const MARKED: &[B] = &[ParamsDyn, Ro, Ro, Ro, Rw, Rw];
    pub const BLOCK: &[B] = &[ParamsDyn, Ro, Ro, Ro, Ro, Ro, Rw];
}

impl Program {
    /// The layouts of the program's bind groups 0, 1, … (entries of `table`).
    pub fn layouts(self) -> &'static [&'static [B]] {
        use Program::*;
        match self {
            ColumnDense => &[table::COLUMN, table::DENSE],
            ColumnCsr => &[table::COLUMN, table::CSR],
            ColumnBatchDense => &[table::BATCH, table::DENSE],
            ColumnBatchCsr => &[table::BATCH, table::CSR],
            ColumnTileDense => &[table::TILE, table::DENSE],
            ColumnTileCsr => &[table::TILE, table::CSR],
            Update => &[table::UPDATE],
            UpdateList => &[table::UPDATE_LIST],
            Active => &[table::ACTIVE],
            Final => &[table::FINAL],
            Gather => &[table::GATHER],
            Below => &[table::BELOW],
            Marked | MarkedFinal => &[table::MARKED],
            Block => &[table::BLOCK],
        }
    }
}

pub(super) fn layout(dev: &wgpu::Device, label: &str, kinds: &[B]) -> wgpu::BindGroupLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let (ty, dynamic) = match k {
                B::ParamsDyn => (wgpu::BufferBindingType::Uniform, true),
                B::Uniform => (wgpu::BufferBindingType::Uniform, false),
                B::Ro => (wgpu::BufferBindingType::Storage { read_only: true }, false),
                B::RoDyn => (wgpu::BufferBindingType::Storage { read_only: true }, true),
                B::Rw => (wgpu::BufferBindingType::Storage { read_only: false }, false),
                B::RwDyn => (wgpu::BufferBindingType::Storage { read_only: false }, true),
            };
            wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: dynamic,
                    min_binding_size: None,
                },
                count: None,
            }
        })
        .collect();
    dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    })
}

fn pipeline_at(
    dev: &wgpu::Device,
    prog: Program,
    wide: bool,
    layouts: &[&wgpu::BindGroupLayout],
    entry: &str,
) -> wgpu::ComputePipeline {
    let src = source(prog, wide);
    let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(&format!("{prog:?}")),
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
    let bgls: Vec<Option<&wgpu::BindGroupLayout>> = layouts.iter().map(|l| Some(*l)).collect();
    let pl = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(&format!("{prog:?}")),
        bind_group_layouts: &bgls,
        immediate_size: 0,
    });
    dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(&format!("{prog:?}")),
        layout: Some(&pl),
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// A pipeline being built on its own thread: drivers compile shaders in parallel, and a
/// first run pays for every program's compilation before its first pass.
type Building<'s> = std::thread::ScopedJoinHandle<'s, Result<wgpu::ComputePipeline, String>>;

/// Starts pipelines on threads of one scope, each with its own validation scope (error scopes
/// belong to the thread that pushes them).
struct Spawner<'s, 'e> {
    sc: &'s std::thread::Scope<'s, 'e>,
    dev: &'s wgpu::Device,
    wide: bool,
}

impl<'s> Spawner<'s, '_> {
    fn start(
        &self,
        prog: Program,
        layouts: Vec<&'s wgpu::BindGroupLayout>,
        entry: &'static str,
    ) -> Building<'s> {
        let (dev, wide) = (self.dev, self.wide);
        self.sc.spawn(move || {
            let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
            let p = pipeline_at(dev, prog, wide, &layouts, entry);
            match pollster::block_on(scope.pop()) {
                Some(e) => Err(format!("{prog:?}: {e}")),
                None => Ok(p),
            }
        })
    }

    /// `prog`'s `main` over one layout.
    fn one(&self, prog: Program, l: &'s wgpu::BindGroupLayout) -> Building<'s> {
        self.start(prog, vec![l], "main")
    }

    /// `prog`'s `main` over a column layout and a data chunk's.
    fn two(
        &self,
        prog: Program,
        l: &'s wgpu::BindGroupLayout,
        chunk: &'s wgpu::BindGroupLayout,
    ) -> Building<'s> {
        self.start(prog, vec![l, chunk], "main")
    }
}

fn join(h: Building<'_>) -> Result<wgpu::ComputePipeline, String> {
    h.join()
        .unwrap_or_else(|_| Err("a pipeline's thread panicked".into()))
}

/// The bind group layouts, the batched passes' where the adapter allows them.
struct Layouts {
    column: wgpu::BindGroupLayout,
    dense: wgpu::BindGroupLayout,
    csr: wgpu::BindGroupLayout,
    batch: Option<wgpu::BindGroupLayout>,
    tile: Option<wgpu::BindGroupLayout>,
    update: wgpu::BindGroupLayout,
    update_list: wgpu::BindGroupLayout,
    active: wgpu::BindGroupLayout,
    fin: wgpu::BindGroupLayout,
    gather: wgpu::BindGroupLayout,
    below: wgpu::BindGroupLayout,
    marked: wgpu::BindGroupLayout,
    block: wgpu::BindGroupLayout,
}

impl Layouts {
    fn new(dev: &wgpu::Device) -> Layouts {
        let lim = dev.limits();
        Layouts {
            column: layout(dev, "column", table::COLUMN),
            dense: layout(dev, "dense chunk", table::DENSE),
            csr: layout(dev, "csr chunk", table::CSR),
            batch: (lim.max_storage_buffers_per_shader_stage >= 11
                && lim.max_dynamic_storage_buffers_per_pipeline_layout >= 4)
                .then(|| layout(dev, "column batch", table::BATCH)),
            tile: (lim.max_storage_buffers_per_shader_stage >= 8)
                .then(|| layout(dev, "column tile", table::TILE)),
            update: layout(dev, "update", table::UPDATE),
            update_list: layout(dev, "update list", table::UPDATE_LIST),
            active: layout(dev, "active", table::ACTIVE),
            fin: layout(dev, "final", table::FINAL),
            gather: layout(dev, "gather", table::GATHER),
            below: layout(dev, "below", table::BELOW),
            marked: layout(dev, "marked", table::MARKED),
            block: layout(dev, "block", table::BLOCK),
        }
    }
}

/// The compiled pipelines, before they join their layouts in [`Pipelines`].
struct Built {
    block_row: wgpu::ComputePipeline,
    block_thread: wgpu::ComputePipeline,
    marked: wgpu::ComputePipeline,
    marked_final: wgpu::ComputePipeline,
    column_dense: wgpu::ComputePipeline,
    column_csr: wgpu::ComputePipeline,
    batch: Option<(wgpu::ComputePipeline, wgpu::ComputePipeline)>,
    tile: Option<(wgpu::ComputePipeline, wgpu::ComputePipeline)>,
    update: wgpu::ComputePipeline,
    update_list: wgpu::ComputePipeline,
    active: wgpu::ComputePipeline,
    fin: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
    below: wgpu::ComputePipeline,
}

impl Built {
    /// Every pipeline over `l`, compiled on threads of their own; the first validation error
    /// of any of them is the error.
    fn compile(dev: &wgpu::Device, wide: bool, l: &Layouts) -> Result<Built, String> {
        use Program as P;
        std::thread::scope(|sc| {
            let s = Spawner { sc, dev, wide };
            let batch = l.batch.as_ref().map(|b| {
                (
                    s.two(P::ColumnBatchDense, b, &l.dense),
                    s.two(P::ColumnBatchCsr, b, &l.csr),
                )
            });
            let tile = l.tile.as_ref().map(|b| {
                (
                    s.two(P::ColumnTileDense, b, &l.dense),
                    s.two(P::ColumnTileCsr, b, &l.csr),
                )
            });
            let block_row = s.start(P::Block, vec![&l.block], "per_row");
            let block_thread = s.start(P::Block, vec![&l.block], "per_thread");
            let (marked, marked_final) = (
                s.one(P::Marked, &l.marked),
                s.one(P::MarkedFinal, &l.marked),
            );
            let column_dense = s.two(P::ColumnDense, &l.column, &l.dense);
            let column_csr = s.two(P::ColumnCsr, &l.column, &l.csr);
            let (update, update_list) = (
                s.one(P::Update, &l.update),
                s.one(P::UpdateList, &l.update_list),
            );
            let (active, fin) = (s.one(P::Active, &l.active), s.one(P::Final, &l.fin));
            let (gather, below) = (s.one(P::Gather, &l.gather), s.one(P::Below, &l.below));
            let joined = |hs: Option<(Building<'_>, Building<'_>)>| match hs {
                Some((d, c)) => Ok(Some((join(d)?, join(c)?))),
                None => Ok::<_, String>(None),
            };
            Ok(Built {
                block_row: join(block_row)?,
                block_thread: join(block_thread)?,
                marked: join(marked)?,
                marked_final: join(marked_final)?,
                column_dense: join(column_dense)?,
                column_csr: join(column_csr)?,
                batch: joined(batch)?,
                tile: joined(tile)?,
                update: join(update)?,
                update_list: join(update_list)?,
                active: join(active)?,
                fin: join(fin)?,
                gather: join(gather)?,
                below: join(below)?,
            })
        })
    }
}

impl Pipelines {
    /// Builds everything, the pipelines on threads of their own; the first validation error
    /// of any of them is the error.
    pub fn new(dev: &wgpu::Device, wide: bool) -> Result<Pipelines, String> {
        let l = Layouts::new(dev);
        let b = Built::compile(dev, wide, &l)?;
        let batch_of = |bgl: Option<wgpu::BindGroupLayout>, p: Option<(_, _)>| {
            bgl.zip(p)
                .map(|(bgl, (dense, csr))| Batch { bgl, dense, csr })
        };
        Ok(Pipelines {
            block_row: b.block_row,
            block_thread: b.block_thread,
            marked: b.marked,
            marked_final: b.marked_final,
            column_dense: b.column_dense,
            column_csr: b.column_csr,
            batch: batch_of(l.batch, b.batch),
            tile: batch_of(l.tile, b.tile),
            update: b.update,
            update_list: b.update_list,
            active: b.active,
            fin: b.fin,
            gather: b.gather,
            below: b.below,
            block_bgl: l.block,
            marked_bgl: l.marked,
            below_bgl: l.below,
            column_bgl: l.column,
            dense_bgl: l.dense,
            csr_bgl: l.csr,
            update_bgl: l.update,
            update_list_bgl: l.update_list,
            active_bgl: l.active,
            final_bgl: l.fin,
            gather_bgl: l.gather,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `const NAME: u32 = VALUE;` lines of a WGSL source (decimal or hex, `u` suffix).
    fn wgsl_consts(src: &str) -> std::collections::HashMap<String, u64> {
        src.lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix("const ")?;
                let (name, rest) = rest.split_once(": u32 = ")?;
                let v = rest.split(';').next()?.trim().trim_end_matches('u');
                let v = match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).ok()?,
                    None => v.parse().ok()?,
                };
                Some((name.to_string(), v))
            })
            .collect()
    }

    /// The device's f64 exponential takes the CPU's steps with the CPU's constants
    /// (`simd::exp_nonpos`): the polynomial's coefficients in order, ln 2's two parts and
    /// log₂e, each the same f64.
    #[test]
    fn the_f64_exponential_has_the_cpu_constants() {
        use crate::backend::simd::{LN2_HI64, LN2_LO64, POLY64};
        let lit = |l: &str| -> Option<f64> {
            let (_, rest) = l.rsplit_once("f64(")?;
            rest.split(')').next()?.parse().ok()
        };
        let poly: Vec<f64> = EXP_F64
            .lines()
            .filter(|l| l.trim_start().starts_with("var s =") || l.contains("s = fma(s, r,"))
            .filter_map(lit)
            .collect();
        assert_eq!(poly, POLY64.to_vec());
        let all: Vec<f64> = EXP_F64.lines().filter_map(lit).collect();
        for c in [LN2_HI64, LN2_LO64, std::f64::consts::LOG2_E] {
            assert!(all.contains(&c), "{c:e} is not in the shader");
        }
    }

    /// The flag bits, sentinels and sizes the host writes are the ones the shaders read: the
    /// constants are defined on both sides, and this keeps them equal.
    #[test]
    fn shader_constants_agree_with_the_host() {
        let common = wgsl_consts(COMMON);
        for (name, host) in [
            ("F_COL_A", F_COL_A),
            ("F_COL_B", F_COL_B),
            ("F_PREV", F_PREV),
            ("F_ROTATE", F_ROTATE),
            ("F_WRITE", F_WRITE),
            ("SRC_PREV", SRC_PREV),
            ("SRC_COL", SRC_COL),
            ("F_NO_BIAS", F_NO_BIAS),
            ("F_COL_C", F_COL_C),
            ("F_COL_D", F_COL_D),
            ("SRC_BLOCK", SRC_BLOCK),
            ("NONE", super::super::NONE),
        ] {
            assert_eq!(common.get(name), Some(&(host as u64)), "{name}");
        }
        assert_eq!(common.get("WG"), Some(&super::super::WG), "WG");
        assert_eq!(
            wgsl_consts(COLUMN_BATCH_SLOTS).get("BK"),
            Some(&(BATCH_COLUMNS as u64)),
            "columns per batched dispatch"
        );
        assert_eq!(
            wgsl_consts(COLUMN_BATCH_TILE).get("BK"),
            Some(&(TILE_COLUMNS as u64)),
            "columns per tiled dispatch"
        );
        // Every entry point runs WG invocations per workgroup, as the host's dispatch counts
        // assume.
        let mut seen = 0;
        for src in [
            COLUMN,
            COLUMN_BATCH,
            UPDATE,
            UPDATE_LIST,
            ACTIVE,
            FINAL,
            GATHER,
            MARKED,
            MARKED_FINAL,
            BLOCK,
        ] {
            for (i, _) in src.match_indices("@workgroup_size(") {
                let n: u64 = src[i + 16..].split(')').next().unwrap().parse().unwrap();
                assert_eq!(
                    n,
                    super::super::WG,
                    "@workgroup_size in\n{}",
                    &src[i..i + 40]
                );
                seen += 1;
            }
        }
        assert!(seen >= 9, "{seen} entry points found");
    }

    /// Every binding a program's WGSL declares is in the layout table at the same group and
    /// index, with the same kind (uniform, read-only or read-write storage), for both gradient
    /// types: the table is what the pipelines' layouts are made from.
    #[test]
    fn wgsl_bindings_match_the_layout_table() {
        use naga::{AddressSpace, StorageAccess};
        for wide in [false, true] {
            for prog in Program::ALL {
                let src = source(prog, wide);
                let module = naga::front::wgsl::parse_str(&src).unwrap();
                let groups = prog.layouts();
                let mut seen = 0;
                for (_, var) in module.global_variables.iter() {
                    let Some(rb) = &var.binding else { continue };
                    let name = var.name.as_deref().unwrap_or("?");
                    let kind = groups
                        .get(rb.group as usize)
                        .and_then(|g| g.get(rb.binding as usize))
                        .unwrap_or_else(|| {
                            panic!(
                                "{prog:?}: {name} at @group({}) @binding({}) is not in the table",
                                rb.group, rb.binding
                            )
                        });
                    let ok = match var.space {
                        AddressSpace::Uniform => matches!(kind, B::ParamsDyn | B::Uniform),
                        AddressSpace::Storage { access }
                            if access.contains(StorageAccess::STORE) =>
                        {
                            matches!(kind, B::Rw | B::RwDyn)
                        }
                        AddressSpace::Storage { .. } => matches!(kind, B::Ro | B::RoDyn),
                        _ => false,
                    };
                    assert!(
                        ok,
                        "{prog:?} (f64 {wide}): {name} is {:?}, the table says {kind:?}",
                        var.space
                    );
                    seen += 1;
                }
                assert!(seen > 0, "{prog:?}: no bindings found");
            }
        }
    }

    /// Every program parses and validates with naga, for both gradient types, without an
    /// adapter.
    #[test]
    fn shaders_validate_with_naga() {
        for wide in [false, true] {
            for prog in Program::ALL {
                let src = source(prog, wide);
                let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
                    panic!("{prog:?} (f64 {wide}): {}", e.emit_to_string(&src))
                });
                let mut v = naga::valid::Validator::new(
                    naga::valid::ValidationFlags::all(),
                    naga::valid::Capabilities::all(),
                );
                v.validate(&module)
                    .unwrap_or_else(|e| panic!("{prog:?} (f64 {wide}): {e:?}"));
            }
        }
    }

    #[test]
    fn params_block_matches_the_wgsl_layout() {
        // 12 u32 + 4 vec2<f32> + 2 f32 + 7 vec2<f32>, a multiple of 16 as uniform blocks
        // require.
        assert_eq!(PARAMS_SIZE, 144);
        assert_eq!(std::mem::size_of::<ChunkInfo>(), 32);
        let x = 0.1f64 + 1e-12;
        let [hi, lo] = split(x);
        assert!((hi as f64 + lo as f64 - x).abs() < 1e-15);
    }
}
