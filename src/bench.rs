//! Kernel-throughput measurement shared by `fwsvm bench kernels` and the criterion benches:
//! seeded synthetic data, the column + update pass with a fresh column each time, the
//! per-iteration round trip with a cached column, and the memory bandwidth they are judged
//! against. Every GPU figure includes the wait for completion (each timed batch ends with a
//! readback).

use crate::active::ActiveSet;
use crate::backend::{Backend, Solvable, Update};
use crate::data::Dataset;
use crate::error::Result;
use crate::rng::SplitMix64;
use std::time::{Duration, Instant};

/// Seeded synthetic data: `m` rows, `d` features uniform in [0, 1), each present with
/// probability `density` (1 = dense); labels +1 for every third row, else −1.
pub fn synthetic(m: usize, d: usize, density: f64, seed: u64) -> Dataset {
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

/// Bytes of feature data one column pass reads: m·d·4 dense; for CSR the values and indices
/// (8 bytes per non-zero) and the row offsets.
pub fn data_bytes(ds: &Dataset) -> u64 {
    if ds.is_dense() {
        (ds.len() * ds.n_features() * 4) as u64
    } else {
        (ds.nnz() * 8 + (ds.len() + 1) * 4) as u64
    }
}

/// What one backend did on one dataset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelTiming {
    /// Seconds per kernel column computed and folded into the gradient (fresh column each
    /// time, amortised over a batch that ends with a readback).
    pub column_s: f64,
    /// Seconds per iteration with a cached column: the fused update, the full reduction
    /// (argmin over all, argmax and αᵀg over A) and its readback.
    pub iteration_s: f64,
    /// Active-set size during the iteration timing.
    pub active: usize,
    /// Median seconds of one submit-and-read-back of a single gradient entry: the floor of
    /// every iteration on a GPU (on the CPU, a function call).
    pub round_trip_s: f64,
    /// Columns and iterations timed.
    pub samples: (usize, usize),
}

/// Times `be` (built with a column cache too small to hold the columns it is asked for):
/// batches of fresh columns until `min_time` has passed, then single iterations likewise.
pub fn time_backend(be: &mut dyn Backend, min_time: Duration) -> Result<KernelTiming> {
    let m = be.len();
    let active = m.min(64);
    let mut alpha = ActiveSet::new(m);
    for j in 0..active {
        alpha.set(j * (m / active).max(1), 1.0 / active as f64);
    }
    be.set_alpha(&alpha)?;
    let mut sink = [0.0];
    // A tiny coefficient keeps g what it was (to rounding) however many passes run.
    let coef = 1e-12;
    let step = 7919 % m.max(1);
    let mut j = 0usize;
    let mut fresh = |be: &mut dyn Backend, n: usize| -> Result<()> {
        for _ in 0..n {
            j = (j + step.max(1)) % m;
            be.update(&Update::one(1.0, j, coef))?;
        }
        be.gather(&[0], &mut sink)
    };
    // Warm-up: pipelines, caches, page faults.
    fresh(be, 2)?;
    let t = Instant::now();
    let mut cols = 0usize;
    let mut batch = 1usize;
    while t.elapsed() < min_time || cols < 3 {
        fresh(be, batch)?;
        cols += batch;
        batch = (batch * 2).min(64);
    }
    let column_s = t.elapsed().as_secs_f64() / cols as f64;

    let hot = alpha.indices()[0];
    be.update(&Update::one(1.0, hot, coef))?;
    be.reduce(&alpha)?;
    let t = Instant::now();
    let mut iters = 0usize;
    while t.elapsed() < min_time || iters < 10 {
        be.update(&Update::one(1.0, hot, coef))?;
        be.reduce(&alpha)?;
        iters += 1;
    }
    let iteration_s = t.elapsed().as_secs_f64() / iters as f64;
    let round_trip_s = time_round_trip(be, 200)?;
    Ok(KernelTiming {
        column_s,
        iteration_s,
        active,
        round_trip_s,
        samples: (cols, iters),
    })
}

/// Median seconds of `n` reads of one gradient entry, after a warm-up.
pub fn time_round_trip(be: &mut dyn Backend, n: usize) -> Result<f64> {
    let mut sink = [0.0];
    be.gather(&[0], &mut sink)?;
    let mut t = Vec::with_capacity(n.max(1));
    for _ in 0..n.max(1) {
        let t0 = Instant::now();
        be.gather(&[0], &mut sink)?;
        t.push(t0.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Seconds per column of the working-set solver's batched pass: `block` of `q` fresh points
/// (their q columns in batched passes, Q_WW and g_W read back; where the backend defers the
/// columns, W's entries only) and the `update_many` that folds the q columns into g (and
/// computes the deferred ones), repeated with new points until `min_time` has passed. `be`
/// needs a column cache of at least 2q + 2 columns, else `block` falls back to single columns.
pub fn time_batched(be: &mut dyn Solvable, q: usize, min_time: Duration) -> Result<f64> {
    let m = be.len();
    let q = q.clamp(1, m);
    let mut alpha = ActiveSet::new(m);
    alpha.set(0, 1.0);
    be.set_alpha(&alpha)?;
    let mut qww = vec![0.0; q * q];
    let mut g_w = vec![0.0; q];
    let mut w = vec![0usize; q];
    let mut cols = vec![(0usize, 0.0f64); q];
    let mut start = 0usize;
    let mut round = |be: &mut dyn Solvable| -> Result<()> {
        // q distinct points spread over the rows, shifted each round so no column repeats
        // until the rows are used up.
        for (k, wk) in w.iter_mut().enumerate() {
            *wk = (start + k * (m / q).max(1)) % m;
        }
        w.sort_unstable();
        w.dedup();
        start = (start + 1) % m;
        let n = w.len();
        be.block(&w, &mut qww[..n * n], &mut g_w[..n])?;
        for (c, &j) in cols.iter_mut().zip(&w) {
            *c = (j, 1e-12);
        }
        be.update_many(1.0, &cols[..n])
    };
    round(be)?;
    let t = Instant::now();
    let mut rounds = 0usize;
    while t.elapsed() < min_time || rounds < 3 {
        round(be)?;
        rounds += 1;
    }
    // The next round's block reads back g_W: end on a readback so that all work is counted.
    let mut sink = [0.0];
    be.gather(&[0], &mut sink)?;
    Ok(t.elapsed().as_secs_f64() / (rounds * q) as f64)
}

/// The host's streaming-read bandwidth in bytes/s: a parallel sum over 256 MiB of f32, best
/// of `reps`.
pub fn host_bandwidth(reps: usize) -> f64 {
    use rayon::prelude::*;
    let n = 64usize << 20;
    let v: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
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
        std::hint::black_box(s);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (n * 4) as f64 / best
}

/// Published peak memory bandwidth (bytes/s) of GPUs this tool is benchmarked on, matched on
/// the adapter name; None for others.
pub fn known_gpu_peak(name: &str) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    let table: [(&str, f64); 9] = [
        ("h200", 4.8e12),
        ("h100 nvl", 3.9e12),
        ("h100 pcie", 2.0e12),
        ("h100", 3.35e12),
        ("a100-sxm4-80gb", 2.039e12),
        ("a100 80gb pcie", 1.935e12),
        ("a100", 1.555e12),
        ("rtx 4090", 1.008e12),
        ("l40s", 0.864e12),
    ];
    table.iter().find(|(k, _)| n.contains(k)).map(|&(_, v)| v)
}

/// The host's peak fused multiply-add rate on all of rayon's threads, measured: each thread
/// runs independent chains of vector FMAs (enough to cover the latency of two FMA units) at
/// the widest width the CPU has — AVX-512, else AVX2 with FMA, else scalar — best of `reps`.
/// What a compute-bound kernel is judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FmaPeak {
    /// f32 and f64 FLOP/s (an FMA counts two).
    pub f32_flops: f64,
    pub f64_flops: f64,
    /// The instruction set the chains ran in ("avx512", "avx2", "scalar").
    pub isa: &'static str,
    /// Threads that ran them.
    pub threads: usize,
}

/// Measures [`FmaPeak`] (about 0.1 s per repetition and precision).
pub fn fma_peak(reps: usize) -> FmaPeak {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    let isa = fma::detect();
    let rate = |f64_lanes: bool| {
        // Chain iterations per thread: ~0.05–0.1 s at a few GHz.
        let iters: u64 = 4_000_000;
        let mut best = 0.0f64;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            let flops: f64 = (0..threads)
                .into_par_iter()
                .map(|k| fma::chains(isa, f64_lanes, iters, 1.0 + k as f64 * 1e-9))
                .sum();
            best = best.max(flops / t.elapsed().as_secs_f64());
        }
        best
    };
    FmaPeak {
        f32_flops: rate(false),
        f64_flops: rate(true),
        isa: isa.name(),
        threads,
    }
}

/// The CPU's f32 dense RBF tiles alone on the calling thread, in FLOP/s of the products (2·d
/// per kernel value): batches of eight columns over one block of rows held in the core's
/// cache, finished in registers, as the working-set block runs them (about `min_time`). None
/// where they do not run (no AVX-512, or fewer than 32 features). Beside [`fma_peak`] per
/// thread it says how much of the block's shortfall is the tiles' own.
pub fn tile_rate(d: usize, min_time: Duration) -> Option<f64> {
    crate::backend::tile_rate(d, min_time)
}

/// The FMA chains of [`fma_peak`].
mod fma {
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub(super) enum Isa {
        Avx512,
        Avx2,
        Scalar,
    }

    impl Isa {
        pub(super) fn name(self) -> &'static str {
            match self {
                Isa::Avx512 => "avx512",
                Isa::Avx2 => "avx2",
                Isa::Scalar => "scalar",
            }
        }
    }

    pub(super) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// Runs `iters` rounds of the chains of `isa` (f64 lanes or f32) seeded with `seed`;
    /// returns the FLOPs done (the result is kept from the optimizer by `black_box`).
    pub(super) fn chains(isa: Isa, f64_lanes: bool, iters: u64, seed: f64) -> f64 {
        match isa {
            // SAFETY: `detect` found the features these copies are compiled for.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe {
                if f64_lanes {
                    avx512_f64(iters, seed)
                } else {
                    avx512_f32(iters, seed)
                }
            },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe {
                if f64_lanes {
                    avx2_f64(iters, seed)
                } else {
                    avx2_f32(iters, seed)
                }
            },
            _ => scalar(iters, seed),
        }
    }

    /// Chains per thread: at least FMA latency (4–5 cycles) × 2 units, within the registers.
    const CHAINS_AVX2: usize = 12;
    const CHAINS_AVX512: usize = 24;

    macro_rules! chain_fn {
        ($name:ident, $feat:literal, $vec:ty, $set1:ident, $fma:ident, $n:expr, $lanes:expr, $elem:ty) => {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = $feat)]
            fn $name(iters: u64, seed: f64) -> f64 {
                let mut acc: [$vec; $n] = [$set1(seed as $elem); $n];
                let a = $set1(0.999_9 as $elem);
                let b = $set1(1e-6 as $elem);
                for _ in 0..iters {
                    for v in acc.iter_mut() {
                        *v = $fma(*v, a, b);
                    }
                }
                std::hint::black_box(acc);
                (iters as usize * $n * $lanes * 2) as f64
            }
        };
    }
    chain_fn!(
        avx2_f32,
        "avx2,fma",
        __m256,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        CHAINS_AVX2,
        8,
        f32
    );
    chain_fn!(
        avx2_f64,
        "avx2,fma",
        __m256d,
        _mm256_set1_pd,
        _mm256_fmadd_pd,
        CHAINS_AVX2,
        4,
        f64
    );
    chain_fn!(
        avx512_f32,
        "avx512f",
        __m512,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        CHAINS_AVX512,
        16,
        f32
    );
    chain_fn!(
        avx512_f64,
        "avx512f",
        __m512d,
        _mm512_set1_pd,
        _mm512_fmadd_pd,
        CHAINS_AVX512,
        8,
        f64
    );

    fn scalar(iters: u64, seed: f64) -> f64 {
        let mut acc = [seed; 8];
        for _ in 0..iters {
            for v in acc.iter_mut() {
                *v = v.mul_add(0.999_9, 1e-6);
            }
        }
        std::hint::black_box(acc);
        (iters as usize * 8 * 2) as f64
    }
}
