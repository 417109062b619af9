//! Throughput of the CPU backend's kernel-column pass (dense and CSR, m = 10⁴ … 4·10⁵), a
//! streaming sum beside it to measure the machine's memory bandwidth, and the per-iteration
//! cost of each variant.
//!
//! `cargo bench --bench kernels` (add `-- column` etc. to filter).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::data::Dataset;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::rng::SplitMix64;
use fwsvm::solver::{Algorithm, SolverParams, solve};
use rayon::prelude::*;
use std::hint::black_box;

fn dataset(m: usize, d: usize, density: f64, seed: u64) -> Dataset {
    let mut r = SplitMix64::new(seed);
    let (mut ip, mut ix, mut vs, mut y) = (vec![0usize], Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for f in 0..d {
            if density >= 1.0 || r.next_f64() < density {
                ix.push(f as u32);
                vs.push(r.next_f64() as f32);
            }
        }
        ip.push(ix.len());
        y.push(if i % 3 == 0 { 1.0 } else { -1.0 });
    }
    Dataset::from_csr(d, ip, ix, vs, y)
}

fn data_bytes(ds: &Dataset) -> u64 {
    if ds.is_dense() {
        (ds.len() * ds.n_features() * 4) as u64
    } else {
        (ds.nnz() * 8 + ds.len() * 8) as u64
    }
}

fn column_pass(c: &mut Criterion) {
    let mut g = c.benchmark_group("column");
    g.sample_size(10);
    for &(label, d, density) in &[
        ("dense-d38", 38usize, 1.0f64),
        ("csr-d123-11pct", 123, 0.11),
    ] {
        for &m in &[10_000usize, 100_000, 400_000] {
            let ds = dataset(m, d, density, 7);
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.1 }, 1.0).unwrap();
            let mut be = cpu_backend(
                &prob,
                CpuConfig {
                    cache_bytes: 0,
                    precision: Precision::F32,
                },
            );
            g.throughput(Throughput::Bytes(data_bytes(&ds)));
            let mut j = 0usize;
            g.bench_with_input(BenchmarkId::new(label, m), &m, |b, _| {
                b.iter(|| {
                    // A new column each call (the two-slot cache never hits).
                    j = (j + 7919) % m;
                    be.column_entries(j, &[], &mut []).unwrap();
                })
            });
        }
    }
    g.finish();
}

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
    for alg in Algorithm::ALL {
        g.bench_function(alg.name(), |b| {
            b.iter(|| {
                let mut be = cpu_backend(
                    &prob,
                    CpuConfig {
                        cache_bytes: 0,
                        precision: Precision::F32,
                    },
                );
                let params = SolverParams {
                    algorithm: alg,
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

criterion_group!(benches, column_pass, stream_sum, iterations);
criterion_main!(benches);
