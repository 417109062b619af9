//! Throughput of the kernel-column pass on the CPU and GPU backends (dense and CSR at 11 %,
//! m ∈ {10⁴, 10⁵, 4·10⁵}, d ∈ {22, 38, 123}), a streaming sum beside it to measure the
//! machine's memory bandwidth, the GPU's per-iteration round trip (update with a cached column,
//! full reduction, readback), the working-set solver's block of q = 64–1024 columns and its
//! update on both backends, the same block in FLOP/s against the CPU's measured FMA peak at
//! d = 8 … 784 and q = 64 … 1024, the per-iteration cost of each variant on the CPU, one sampled
//! iteration's kernel blocks per engine, and the exact product of certification (GFLOP/s).
//!
//! `cargo bench --bench kernels` (add `-- column`, `-- gpu` etc. to filter). `fwsvm bench
//! kernels` prints the same measurements as a table with the fraction of peak bandwidth.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::data::Dataset;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::{Algorithm, SolverParams, solve};
use rayon::prelude::*;
use std::hint::black_box;

fn dataset(m: usize, d: usize, density: f64, seed: u64) -> Dataset {
    fwsvm::bench::synthetic(m, d, density, seed)
}

/// The grid: m ∈ {10⁴, 10⁵, 4·10⁵}, d ∈ {22, 38, 123}, dense and CSR at 11 %.
const GRID_M: [usize; 3] = [10_000, 100_000, 400_000];
const GRID_D: [usize; 3] = [22, 38, 123];
const LAYOUTS: [(&str, f64); 2] = [("dense", 1.0), ("csr11pct", 0.11)];

fn column_pass(c: &mut Criterion) {
    let mut g = c.benchmark_group("column");
    g.sample_size(10);
    for &(layout, density) in &LAYOUTS {
        for &d in &GRID_D {
            for &m in &GRID_M {
                let ds = dataset(m, d, density, 7);
                let prob =
                    Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
                let mut be = cpu_backend(
                    &prob,
                    CpuConfig {
                        cache_bytes: 0,
                        precision: Some(Precision::F32),
                        batched: false,
                    },
                );
                g.throughput(Throughput::Bytes(fwsvm::bench::data_bytes(&ds)));
                let mut j = 0usize;
                g.bench_with_input(BenchmarkId::new(format!("{layout}-d{d}"), m), &m, |b, _| {
                    b.iter(|| {
                        // A new column each call (the two-slot cache never hits).
                        j = (j + 7919) % m;
                        be.column_entries(j, &[], &mut []).unwrap();
                    })
                });
            }
        }
    }
    g.finish();
}

/// Batched column passes (`Columns::prefetch_columns`): k fresh columns per call, each block
/// of rows read once for up to `simd::BATCH` (8) of them. Throughput in columns per second
/// ("elements"), so k = 1 is the plain column pass and the ratio at k = 4, 8, 16 is what
/// batching buys; m = 10⁵.
fn batched_columns(c: &mut Criterion) {
    let mut g = c.benchmark_group("batched");
    g.sample_size(10);
    let m = 100_000;
    for &(layout, density, d) in &[
        ("dense", 1.0, 22),
        ("dense", 1.0, 38),
        ("csr11pct", 0.11, 123),
    ] {
        let ds = dataset(m, d, density, 5);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
        for &k in &[1usize, 4, 8, 16] {
            // Room for 2k columns: prefetch fills at most half the cache.
            let mut be = cpu_backend(
                &prob,
                CpuConfig {
                    cache_bytes: 2 * k * m * 4,
                    precision: Some(Precision::F32),
                    batched: false,
                },
            );
            let mut j = 0usize;
            let mut js = vec![0usize; k];
            g.throughput(Throughput::Elements(k as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("{layout}-d{d}-m{m}"), k),
                &k,
                |b, _| {
                    b.iter(|| {
                        for x in js.iter_mut() {
                            j = (j + 7919) % m;
                            *x = j;
                        }
                        assert_eq!(be.prefetch_columns(&js).unwrap(), k);
                    })
                },
            );
        }
    }
    g.finish();
}

/// One outer iteration's data work of the working-set solver (`-a ws`) at q = 64, 256, 1024:
/// the block of q fresh columns (`Columns::block`: batched passes, Q_WW read back) and the
/// update of g by all q of them (`update_many`), m = 10⁵, on the CPU and on a GPU (any
/// adapter; there the block is batched column passes and one readback of Q_WW and g_W). Throughput in
/// columns per second; one RBF column costs about m·(2·nnz/m + 25) flops (dot, distance, exp,
/// labels), so GFLOP/s = columns/s × m·(2·nnz/m + 25) / 10⁹ (d = 38 dense: 10.1 MFLOP a column).
fn working_set_block(c: &mut Criterion) {
    use fwsvm::backend::Solvable;
    let mut g = c.benchmark_group("ws-block");
    g.sample_size(10);
    let m = 100_000;
    let ds = dataset(m, 38, 1.0, 9);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
    let mut run = |name: &str, be: &mut dyn Solvable, q: usize| {
        let mut out = vec![0.0; q * q];
        let mut gw = vec![0.0; q];
        let mut w = vec![0usize; q];
        let mut j = 0usize;
        g.throughput(Throughput::Elements(q as u64));
        g.bench_with_input(BenchmarkId::new(name, q), &q, |b, _| {
            b.iter(|| {
                for x in w.iter_mut() {
                    j = (j + 7919) % m;
                    *x = j;
                }
                w.sort_unstable();
                w.dedup();
                let n = w.len();
                be.block(&w, &mut out[..n * n], &mut gw[..n]).unwrap();
                let cols: Vec<(usize, f64)> = w.iter().map(|&i| (i, 1e-6)).collect();
                be.update_many(1.0, &cols).unwrap();
            })
        });
    };
    for q in [64usize, 256, 1024] {
        let mut be = cpu_backend(
            &prob,
            CpuConfig {
                cache_bytes: (2 * q + 4) * m * 4,
                precision: Some(Precision::F32),
                batched: false,
            },
        );
        run("cpu-dense-d38-m100000", be.as_mut(), q);
    }
    #[cfg(feature = "gpu")]
    {
        use fwsvm::backend::Backend;
        use fwsvm::backend::gpu::{DeviceSelector, GpuBackend, GpuConfig, GpuContext};
        let Ok(Some(ctx)) = GpuContext::open(&DeviceSelector::from_arg(None, DeviceSelector::Any))
        else {
            eprintln!("gpu ws-block bench skipped: no adapter");
            g.finish();
            return;
        };
        let tag = if ctx.is_software() {
            "gpu-software"
        } else {
            "gpu"
        };
        // A software adapter takes seconds per block: q = 64 only there.
        let qs: &[usize] = if ctx.is_software() {
            &[64]
        } else {
            &[64, 256, 1024]
        };
        for &q in qs {
            let Ok(mut be) = GpuBackend::new(
                &prob,
                &ctx,
                GpuConfig {
                    cache_bytes: (2 * q + 4) * m * 4,
                    precision: Precision::F32,
                    max_chunk_bytes: None,
                    ..Default::default()
                },
            ) else {
                eprintln!("gpu ws-block bench skipped at q = {q}: the device cannot hold it");
                continue;
            };
            be.set_alpha(&{
                let mut a = fwsvm::active::ActiveSet::new(m);
                a.set(0, 1.0);
                a
            })
            .unwrap();
            run(&format!("{tag}-dense-d38-m100000"), &mut be, q);
        }
    }
    g.finish();
}

/// The working-set block against the CPU's FMA peak: q = 64 … 1024 fresh columns over
/// m = 20,000 dense rows of d = 8, 54, 256, 784 features (RBF, f32 columns), each block and
/// its fold into g timed as in `ws-block`. Throughput is in FLOPs of the products (2·d per
/// kernel value), so criterion's `elem/s` reads as FLOP/s; the peak it is judged against is
/// measured first ([`fwsvm::bench::fma_peak`]) and printed. `fwsvm bench kernels` prints the
/// same as a table with the fraction of peak.
fn block_flops(c: &mut Criterion) {
    let peak = fwsvm::bench::fma_peak(3);
    eprintln!(
        "FMA peak (measured, {} on {} threads): {:.1} GFLOP/s f32, {:.1} GFLOP/s f64",
        peak.isa,
        peak.threads,
        peak.f32_flops / 1e9,
        peak.f64_flops / 1e9
    );
    let mut g = c.benchmark_group("block-flops");
    g.sample_size(10);
    let m = 20_000;
    for d in [8usize, 54, 256, 784] {
        let ds = dataset(m, d, 1.0, 9);
        let gamma = 1.0 / d as f64;
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma }, 1.0).unwrap();
        for q in [64usize, 128, 256, 512, 1024] {
            let mut be = cpu_backend(
                &prob,
                CpuConfig {
                    cache_bytes: (2 * q + 4) * m * 4,
                    precision: Some(Precision::F32),
                    batched: false,
                },
            );
            let (mut out, mut gw, mut w) = (vec![0.0; q * q], vec![0.0; q], vec![0usize; q]);
            let mut start = 0usize;
            g.throughput(Throughput::Elements((2 * m * d * q) as u64));
            g.bench_with_input(BenchmarkId::new(format!("d{d}"), q), &q, |b, _| {
                b.iter(|| {
                    for (k, x) in w.iter_mut().enumerate() {
                        *x = (start + k * (m / q)) % m;
                    }
                    start = (start + 1) % m;
                    w.sort_unstable();
                    w.dedup();
                    let n = w.len();
                    be.block(&w, &mut out[..n * n], &mut gw[..n]).unwrap();
                    let cols: Vec<(usize, f64)> = w.iter().map(|&i| (i, 1e-12)).collect();
                    be.update_many(1.0, &cols).unwrap();
                })
            });
        }
    }
    g.finish();
}

/// The GPU backend on the same grid (any adapter: `WGPU_ADAPTER_NAME` picks one), timed with
/// the wait for completion: each sample is a batch of fresh-column updates ended by a
/// readback, and for the round trip an update with a cached column plus the full reduction.
#[cfg(feature = "gpu")]
fn gpu_passes(c: &mut Criterion) {
    use fwsvm::active::ActiveSet;
    use fwsvm::backend::gpu::{DeviceSelector, GpuBackend, GpuConfig, GpuContext};
    use fwsvm::backend::{Backend, Columns, Update};
    use std::time::Instant;
    let ctx = match GpuContext::open(&DeviceSelector::from_arg(None, DeviceSelector::Any)) {
        Ok(Some(c)) => c,
        _ => {
            eprintln!("gpu benches skipped: no adapter");
            return;
        }
    };
    let tag = if ctx.is_software() {
        "gpu-software"
    } else {
        "gpu"
    };
    let mut g = c.benchmark_group(format!("{tag}-column"));
    g.sample_size(10);
    for &(layout, density) in &LAYOUTS {
        for &d in &GRID_D {
            for &m in &GRID_M {
                let ds = dataset(m, d, density, 7);
                let prob =
                    Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
                let mut be = GpuBackend::new(
                    &prob,
                    &ctx,
                    GpuConfig {
                        cache_bytes: 0,
                        precision: Precision::F32,
                        max_chunk_bytes: None,
                        ..Default::default()
                    },
                )
                .unwrap();
                let mut alpha = ActiveSet::new(m);
                for k in 0..64 {
                    alpha.set(k * (m / 64), 1.0 / 64.0);
                }
                be.set_alpha(&alpha).unwrap();
                g.throughput(Throughput::Bytes(fwsvm::bench::data_bytes(&ds)));
                let mut j = 0usize;
                let mut sink = [0.0];
                g.bench_with_input(BenchmarkId::new(format!("{layout}-d{d}"), m), &m, |b, _| {
                    b.iter_custom(|iters| {
                        let t = Instant::now();
                        for _ in 0..iters {
                            j = (j + 7919) % m;
                            be.update(&Update::one(1.0, j, 1e-12)).unwrap();
                        }
                        be.gather(&[0], &mut sink).unwrap();
                        t.elapsed()
                    })
                });
            }
        }
    }
    g.finish();
    let mut g = c.benchmark_group(format!("{tag}-iteration"));
    g.sample_size(10);
    for &(layout, density) in &LAYOUTS {
        for &m in &GRID_M {
            let d = 38;
            let ds = dataset(m, d, density, 7);
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
            let mut be = GpuBackend::new(
                &prob,
                &ctx,
                GpuConfig {
                    cache_bytes: 1 << 26,
                    precision: Precision::F32,
                    max_chunk_bytes: None,
                    ..Default::default()
                },
            )
            .unwrap();
            let mut alpha = ActiveSet::new(m);
            for k in 0..64 {
                alpha.set(k * (m / 64), 1.0 / 64.0);
            }
            be.set_alpha(&alpha).unwrap();
            g.bench_with_input(BenchmarkId::new(format!("{layout}-d{d}"), m), &m, |b, _| {
                b.iter(|| {
                    be.update(&Update::one(1.0, 0, 1e-12)).unwrap();
                    black_box(be.reduce(&alpha).unwrap())
                })
            });
        }
    }
    g.finish();
    // Batched columns on the GPU: k fresh columns per call (four per pass over the data),
    // columns per second; the readback of one entry ends each sample.
    let mut g = c.benchmark_group(format!("{tag}-batched"));
    g.sample_size(10);
    let m = 100_000;
    for &(layout, density, d) in &[("dense", 1.0, 22), ("csr11pct", 0.11, 123)] {
        let ds = dataset(m, d, density, 5);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
        for &k in &[1usize, 4, 8, 16] {
            let mut be = GpuBackend::new(
                &prob,
                &ctx,
                GpuConfig {
                    // Room for 2k slots, each aligned up from m·4 bytes.
                    cache_bytes: 2 * k * (m * 4 + 4096),
                    precision: Precision::F32,
                    max_chunk_bytes: None,
                    ..Default::default()
                },
            )
            .unwrap();
            let mut j = 0usize;
            let mut js = vec![0usize; k];
            let mut sink = [0.0];
            g.throughput(Throughput::Elements(k as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("{layout}-d{d}-m{m}"), k),
                &k,
                |b, _| {
                    b.iter_custom(|iters| {
                        let t = Instant::now();
                        for _ in 0..iters {
                            for x in js.iter_mut() {
                                j = (j + 7919) % m;
                                *x = j;
                            }
                            assert_eq!(be.prefetch_columns(&js).unwrap(), k);
                        }
                        be.gather(&[0], &mut sink).unwrap();
                        t.elapsed()
                    })
                },
            );
        }
    }
    g.finish();
}

#[cfg(not(feature = "gpu"))]
fn gpu_passes(_: &mut Criterion) {}

fn stream_sum(c: &mut Criterion) {
    let n = 64 << 20; // 256 MiB of f32
    let v: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut g = c.benchmark_group("memory");
    g.sample_size(10);
    g.throughput(Throughput::Bytes((n * 4) as u64));
    g.bench_function("stream-sum-256MiB", |b| {
        b.iter(|| {
            let s: f32 = v
                .par_chunks(1 << 16)
                .map(|ch| {
                    let mut acc = [0f32; 16];
                    for blk in ch.chunks_exact(16) {
                        for l in 0..16 {
                            acc[l] += blk[l];
                        }
                    }
                    acc.iter().sum::<f32>()
                })
                .sum();
            black_box(s)
        })
    });
    g.finish();
}

fn iterations(c: &mut Criterion) {
    let ds = dataset(50_000, 22, 1.0, 3);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 10.0).unwrap();
    let mut g = c.benchmark_group("iterations-x100");
    g.sample_size(10);
    for alg in Algorithm::FW {
        g.bench_function(alg.name(), |b| {
            b.iter(|| {
                let mut be = cpu_backend(
                    &prob,
                    CpuConfig {
                        cache_bytes: 0,
                        precision: Some(Precision::F32),
                        batched: false,
                    },
                );
                let params = SolverParams {
                    algorithm: Some(alg),
                    eps: 1e-12,
                    max_iter: 100,
                    certify: false,
                    ..Default::default()
                };
                black_box(
                    solve(&prob, be.as_mut(), &params, &mut [])
                        .unwrap()
                        .iterations,
                )
            })
        });
    }
    g.finish();
}

/// One sampled iteration's kernel blocks (docs/METHODS.md): the draw's |S| × |A| block
/// (|S| = 194) and the step's two columns on the tracked set T = A, as one engine call, on the
/// CPU engine and on the device (any adapter) including the readback.
fn sampled_blocks(c: &mut Criterion) {
    use fwsvm::active::ActiveSet;
    use fwsvm::backend::sampled::{BlockEngine, BlockJob, CpuBlocks, Weights};
    let m = 100_000;
    #[cfg(feature = "gpu")]
    let ctx = fwsvm::backend::gpu::GpuContext::open(&fwsvm::backend::gpu::DeviceSelector::Any)
        .ok()
        .flatten();
    let mut g = c.benchmark_group("sampled-block");
    g.sample_size(10);
    for d in [38, 123] {
        let ds = dataset(m, d, 1.0, 7);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
        for na in [1_000usize, 4_000] {
            let mut alpha = ActiveSet::new(m);
            for k in 0..na {
                alpha.set(k * (m / na), 1.0 / na as f64);
            }
            let tracked = alpha.indices().to_vec();
            let cols = [(5usize, 0.01), (tracked[3], -0.01)];
            let mut engines: Vec<(String, Box<dyn BlockEngine + '_>)> =
                vec![("cpu".into(), Box::new(CpuBlocks::new(&prob)))];
            #[cfg(feature = "gpu")]
            if let Some(ctx) = &ctx {
                let tag = if ctx.is_software() {
                    "gpu-software"
                } else {
                    "gpu"
                };
                let e = fwsvm::backend::gpu::block::GpuBlocks::new(
                    &prob,
                    ctx,
                    fwsvm::backend::gpu::GpuConfig::default(),
                )
                .unwrap();
                engines.push((tag.into(), Box::new(e)));
            }
            for (tag, e) in engines.iter_mut() {
                let mut draw = 0usize;
                let (mut gs, mut gt) = (vec![0.0; 194], vec![0.0; tracked.len()]);
                g.bench_function(BenchmarkId::new(format!("{tag}-d{d}-A{na}"), m), |b| {
                    b.iter(|| {
                        draw += 1;
                        let rows: Vec<usize> =
                            (0..194).map(|k| (draw * 7919 + k * 104_729) % m).collect();
                        e.run(&mut [
                            BlockJob {
                                rows: &tracked,
                                weights: Weights::Cols(&cols),
                                out: &mut gt,
                            },
                            BlockJob {
                                rows: &rows,
                                weights: Weights::Alpha(&alpha),
                                out: &mut gs,
                            },
                        ])
                        .unwrap();
                        black_box(gs[0])
                    })
                });
            }
        }
    }
    g.finish();
}

/// The exact product behind certification, the rebuilt gradient and prediction
/// (`fwsvm::backend::gram`): g over all m rows against |A| support vectors. Throughput in
/// multiply-adds of the dots actually done (2·nnz(x_i)·|A| flops per row) — criterion reports
/// them as "elements" per second, i.e. GFLOP/s ÷ 10⁹ — beside the kernel evaluations (m·|A|),
/// each an exp.
fn certification_product(c: &mut Criterion) {
    use fwsvm::active::ActiveSet;
    let mut g = c.benchmark_group("certify");
    g.sample_size(10);
    for &(layout, density, d) in &[
        ("dense", 1.0, 22),
        ("dense", 1.0, 38),
        ("csr11pct", 0.11, 123),
    ] {
        for &na in &[1_000usize, 5_000] {
            let m = 50_000;
            let ds = dataset(m, d, density, 3);
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
            let mut a = ActiveSet::new(m);
            for k in 0..na {
                a.set((k * 7919) % m, 1.0);
            }
            a.scale(1.0 / a.sum());
            let flops = 2.0 * ds.nnz() as f64 * na as f64;
            g.throughput(Throughput::Elements(flops as u64));
            let mut out = vec![0.0; m];
            g.bench_with_input(
                BenchmarkId::new(format!("{layout}-d{d}-m{m}"), na),
                &na,
                |b, _| b.iter(|| fwsvm::backend::exact::full_gradient(&prob, &a, &mut out)),
            );
            // The certification itself: on AVX-512, the f32 screen with f64 rows only where
            // its bound does not decide (the same FLOP count, so the rates compare).
            g.bench_with_input(
                BenchmarkId::new(format!("screened-{layout}-d{d}-m{m}"), na),
                &na,
                |b, _| b.iter(|| fwsvm::backend::exact::certify(&prob, &a)),
            );
        }
    }
    g.finish();
}

criterion_group!(
    benches,
    column_pass,
    batched_columns,
    working_set_block,
    block_flops,
    stream_sum,
    iterations,
    gpu_passes,
    sampled_blocks,
    certification_product
);
criterion_main!(benches);
