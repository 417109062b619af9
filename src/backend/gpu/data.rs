//! A dataset's feature rows on the device, uploaded once and shared by every backend that
//! trains on it or on a subset of its rows (cross-validation folds, one-versus-one pairs, grid
//! points: `Device::share` / `Device::restrict`).
//!
//! Rows are split into chunks no larger than a storage binding: dense chunks feature-major
//! (x[f · n + r], neighbouring invocations read neighbouring words), CSR chunks with a
//! chunk-relative `indptr`. A backend binds each chunk with its own small uniform and, for a
//! subset of rows, a map from its rows to the chunk's (`shaders/column.wgsl`).

use super::pipelines::ChunkInfo;
use super::{Chunk, GpuContext, Pipelines, bind_group, ceil_div};
use crate::data::{Dataset, Features};
use crate::error::{Error, Result};
use wgpu::util::DeviceExt;

/// One chunk: global rows r0..r1 and their buffers (dense: [x]; CSR: [indptr, indices, values]).
struct DataChunk {
    r0: usize,
    r1: usize,
    bufs: Vec<wgpu::Buffer>,
}

/// A dataset's rows on the device.
pub struct GpuData {
    pub(crate) dense: bool,
    pub(crate) d: usize,
    m: usize,
    chunks: Vec<DataChunk>,
    /// Bytes uploaded.
    pub bytes: u64,
}

impl std::fmt::Debug for GpuData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuData")
            .field("rows", &self.m)
            .field("features", &self.d)
            .field("dense", &self.dense)
            .field("chunks", &self.chunks.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

fn init(dev: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    let mut v = bytes.to_vec();
    v.resize(v.len().max(16).next_multiple_of(4), 0);
    dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &v,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
    })
}

impl GpuData {
    /// Uploads `ds` in chunks of at most `max_chunk_bytes` (default: the adapter's binding
    /// limit), checking for allocation failures.
    pub fn upload(ds: &Dataset, ctx: &GpuContext, max_chunk_bytes: Option<u64>) -> Result<GpuData> {
        let lim = &ctx.limits;
        let max_bind = lim.max_storage_buffer_binding_size.min(lim.max_buffer_size);
        let limit = max_chunk_bytes.unwrap_or(max_bind).min(max_bind).max(16);
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let data = Self::upload_unscoped(ds, ctx, limit);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Backend(format!(
                "{} could not hold the data ({:.1} MiB): {e}",
                ctx.adapter.name,
                data.as_ref().map_or(0, |d| d.bytes) as f64 / (1024.0 * 1024.0)
            )));
        }
        ctx.check("upload")?;
        data
    }

    /// The upload itself, inside the caller's error scope; `limit` bytes per binding.
    pub(super) fn upload_unscoped(ds: &Dataset, ctx: &GpuContext, limit: u64) -> Result<GpuData> {
        let dev = &ctx.device;
        let m = ds.len();
        let d = ds.n_features().max(1);
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        match &ds.features {
            Features::Dense { .. } => {
                if 4 * d as u64 > limit {
                    return Err(Error::Backend(format!(
                        "one row of {d} features ({} bytes) exceeds the {limit}-byte binding limit",
                        4 * d
                    )));
                }
                let rows = ((limit / (4 * d as u64)) as usize).max(1);
                let mut r = 0;
                while r < m {
                    let e = (r + rows).min(m);
                    ranges.push((r, e));
                    r = e;
                }
            }
            Features::Sparse { indptr, .. } => {
                let cap = (limit / 4) as usize;
                let mut r = 0;
                while r < m {
                    let mut e = r;
                    while e < m && indptr[e + 1] - indptr[r] <= cap && e + 2 - r <= cap {
                        e += 1;
                    }
                    if e == r {
                        return Err(Error::Backend(format!(
                            "row {} has {} non-zeros, more than one {limit}-byte binding holds",
                            r + 1,
                            indptr[r + 1] - indptr[r]
                        )));
                    }
                    ranges.push((r, e));
                    r = e;
                }
            }
        }
        if ranges.is_empty() {
            ranges.push((0, 0));
        }
        let mut bytes = 0u64;
        let mut chunks = Vec::with_capacity(ranges.len());
        for &(r0, r1) in &ranges {
            let n = r1 - r0;
            let bufs = match &ds.features {
                Features::Dense { values, n_features } => {
                    let mut fm = vec![0f32; n * d];
                    for i in 0..n {
                        for f in 0..*n_features {
                            fm[f * n + i] = values[(r0 + i) * n_features + f];
                        }
                    }
                    bytes += fm.len() as u64 * 4;
                    vec![init(dev, "x dense", bytemuck::cast_slice(&fm))]
                }
                Features::Sparse {
                    indptr,
                    indices,
                    values,
                    ..
                } => {
                    let base = indptr[r0];
                    let ip: Vec<u32> = indptr[r0..=r1].iter().map(|&p| (p - base) as u32).collect();
                    let nz = indptr[r1] - base;
                    bytes += (ip.len() + 2 * nz) as u64 * 4;
                    vec![
                        init(dev, "x indptr", bytemuck::cast_slice(&ip)),
                        init(
                            dev,
                            "x indices",
                            bytemuck::cast_slice(&indices[base..base + nz]),
                        ),
                        init(
                            dev,
                            "x values",
                            bytemuck::cast_slice(&values[base..base + nz]),
                        ),
                    ]
                }
            };
            chunks.push(DataChunk { r0, r1, bufs });
        }
        Ok(GpuData {
            dense: ds.is_dense(),
            d,
            m,
            chunks,
            bytes,
        })
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.m
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.m == 0
    }
}

/// A backend's bind groups over `data`: all its rows (`rows` None), or the problem rows
/// `rows[i]` (ascending global indices) — each chunk then gets the map from the problem's rows
/// in it to the chunk's local rows. `m` is the problem's size.
pub(super) fn bind_chunks(
    dev: &wgpu::Device,
    pipes: &Pipelines,
    data: &GpuData,
    rows: Option<&[usize]>,
    m: usize,
    software: bool,
) -> Result<Vec<Chunk>> {
    if rows.is_none() && data.m != m {
        return Err(Error::Backend(format!(
            "the shared device data hold {} rows, the problem {m}",
            data.m
        )));
    }
    if let Some(r) = rows {
        if r.len() != m {
            return Err(Error::Backend(format!(
                "a view of {} rows for a problem of {m}",
                r.len()
            )));
        }
        if r.windows(2).any(|w| w[0] >= w[1]) || r.last().is_some_and(|&l| l >= data.m) {
            return Err(Error::Backend(
                "a view's rows must be ascending indices of the shared data".into(),
            ));
        }
    }
    let mut out = Vec::with_capacity(data.chunks.len());
    let mut s = 0usize; // first problem row not yet placed
    for c in &data.chunks {
        let (sub0, n, map) = match rows {
            None => (c.r0, c.r1 - c.r0, None),
            Some(r) => {
                let s0 = s;
                while s < r.len() && r[s] < c.r1 {
                    s += 1;
                }
                if s == s0 {
                    continue;
                }
                let map: Vec<u32> = r[s0..s].iter().map(|&g| (g - c.r0) as u32).collect();
                (s0, s - s0, Some(map))
            }
        };
        let nwg = if software {
            8u64.min(ceil_div(n as u64, 256)).max(1)
        } else {
            ceil_div(n as u64, 256).clamp(1, 65535)
        } as u32;
        let info = ChunkInfo {
            r0: sub0 as u32,
            n: n as u32,
            nwg,
            stride: (c.r1 - c.r0) as u32,
            mapped: map.is_some() as u32,
            ..Default::default()
        };
        let info_buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("chunk info"),
            contents: bytemuck::bytes_of(&info),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let map_buf = init(
            dev,
            "chunk row map",
            bytemuck::cast_slice(map.as_deref().unwrap_or(&[0u32])),
        );
        let bind = if data.dense {
            bind_group(
                dev,
                "dense chunk",
                &pipes.dense_bgl,
                &[
                    info_buf.as_entire_binding(),
                    c.bufs[0].as_entire_binding(),
                    map_buf.as_entire_binding(),
                ],
            )
        } else {
            bind_group(
                dev,
                "csr chunk",
                &pipes.csr_bgl,
                &[
                    info_buf.as_entire_binding(),
                    c.bufs[0].as_entire_binding(),
                    c.bufs[1].as_entire_binding(),
                    c.bufs[2].as_entire_binding(),
                    map_buf.as_entire_binding(),
                ],
            )
        };
        out.push(Chunk {
            bind,
            nwg,
            _bufs: vec![info_buf, map_buf],
        });
    }
    Ok(out)
}
