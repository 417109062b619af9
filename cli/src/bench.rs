//! `fwsvm bench kernels`: kernel-column throughput and per-iteration latency per backend on
//! seeded synthetic data, against the memory bandwidth of the device.

use super::common::{BackendArg, open_device, set_threads};
use clap::{Args, Subcommand, ValueEnum};
use fwsvm::backend::Device;
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::bench::{
    KernelTiming, data_bytes, host_bandwidth, synthetic, time_backend, time_batched,
};
use fwsvm::error::{Error, Result};
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::train::KernelKind;
use std::time::Duration;

/// `fwsvm bench`: the algorithm matrix (flags or --config), or a subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    matrix: super::matrix::MatrixArgs,
}

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Kernel-column pass (GB/s, kernel evaluations/s, fraction of the memory bandwidth) and
    /// per-iteration round trip, per backend, on synthetic data.
    Kernels(KernelsArgs),
    /// Training time against rows on the seeded checkerboard: table, CSV, log-log plot and
    /// the fitted exponent.
    Scale(super::scale_bench::ScaleBenchArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchBackend {
    /// The CPU, and a hardware GPU when there is one.
    Auto,
    /// The CPU only.
    Cpu,
    /// A GPU only (any adapter, software ones included).
    Gpu,
    /// The CPU and a GPU (any adapter).
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LayoutArg {
    Dense,
    Csr,
}

/// Options of `fwsvm bench kernels`.
#[derive(Debug, Args)]
pub struct KernelsArgs {
    /// Backends to measure.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BenchBackend,
    /// Row counts m.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,400000", value_parser = super::common::parse_count::<usize>)]
    rows: Vec<usize>,
    /// Feature counts d.
    #[arg(long, value_delimiter = ',', default_value = "22,38,123", value_parser = super::common::parse_count::<usize>)]
    dims: Vec<usize>,
    /// Layouts: dense rows, and CSR rows at --density.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "dense,csr")]
    layouts: Vec<LayoutArg>,
    /// Fraction of non-zero features in the CSR data (a9a has 0.11).
    #[arg(long, default_value_t = 0.11, value_parser = super::common::parse_positive)]
    density: f64,
    /// Kernel (γ = 1/d for rbf and poly).
    #[arg(short = 'k', long, value_enum, default_value = "rbf")]
    kernel: KernelKind,
    /// Seconds spent on each measurement (at least).
    #[arg(long, default_value_t = 1.0, value_parser = super::common::parse_positive)]
    min_time: f64,
    /// The CPU's memory bandwidth in GB/s [default: measured, a parallel streaming sum].
    #[arg(long, value_name = "GB/S", value_parser = super::common::parse_positive)]
    cpu_peak: Option<f64>,
    /// The GPU's memory bandwidth in GB/s [default: measured, device-to-device copies
    /// counting bytes read and written; the published figure of known GPUs is printed beside].
    #[arg(long, value_name = "GB/S", value_parser = super::common::parse_positive)]
    gpu_peak: Option<f64>,
    /// Working-set size q of the batched measurement (the q columns of a working set in
    /// batched passes and their fold into the gradient); 0 skips it. Capped so that the
    /// 2q + 2 cached columns fit in 1 GiB.
    #[arg(long, default_value_t = 64, value_parser = super::common::parse_count::<usize>)]
    batch: usize,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<std::path::PathBuf>,
    /// GPU adapter: an index or part of a name, as `fwsvm info` lists them.
    #[arg(long, value_name = "INDEX|NAME")]
    device: Option<String>,
    /// Precision of the columns (CPU) or of the gradient and columns (GPU).
    #[arg(long, value_enum, default_value = "f32")]
    precision: Precision,
    /// Worker threads for the CPU (0 = one per core).
    #[arg(long, default_value_t = 0, value_parser = super::common::parse_count::<usize>)]
    threads: usize,
    /// Seed of the synthetic data.
    #[arg(long, default_value_t = 1, value_parser = super::common::parse_count::<u64>)]
    seed: u64,
    /// Feature counts d of the working-set block table (dense rows, rbf): the q columns of a
    /// working set computed and folded into the gradient, in GFLOP/s (2·d per kernel value)
    /// beside the CPU's measured FMA peak. Empty (`--block-dims ''`) skips the table.
    #[arg(long, value_delimiter = ',', default_value = "8,54,256,784", value_parser = super::common::parse_count::<usize>)]
    block_dims: Vec<usize>,
    /// Working-set sizes q of the block table.
    #[arg(long, value_delimiter = ',', default_value = "64,128,256,512,1024", value_parser = super::common::parse_count::<usize>)]
    block_q: Vec<usize>,
    /// Rows m of the block table.
    #[arg(long, default_value_t = 20_000, value_parser = super::common::parse_count::<usize>)]
    block_rows: usize,
}

/// Runs `fwsvm bench …`.
pub fn run(a: BenchArgs) -> Result<()> {
    match a.command {
        Some(BenchCommand::Kernels(k)) => kernels(k),
        Some(BenchCommand::Scale(s)) => super::scale_bench::run(s),
        None => super::matrix::run(a.matrix),
    }
}

fn kernels(a: KernelsArgs) -> Result<()> {
    set_threads(a.threads, false);
    check_kernels_args(&a)?;
    let targets = kernel_targets(&a)?;
    let mut json = Vec::new();
    for (name, dev, peak, src) in &targets {
        println!(
            "{name}: memory bandwidth {:.1} GB/s ({src}); {} kernel, {} precision",
            peak / 1e9,
            format!("{:?}", a.kernel).to_lowercase(),
            format!("{:?}", a.precision).to_lowercase()
        );
        println!(
            "| layout | m | d | non-zeros/row | data MB | column + update | GB/s | of peak | kernel evals/s | batched column (q) | batched evals/s | batched GB/s (effective) | iteration (cached column) | round trip |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for &layout in &a.layouts {
            for &d in &a.dims {
                for &m in &a.rows {
                    json.push(kernel_row(&a, (name, dev, *peak), layout, d, m)?);
                }
            }
        }
        println!();
    }
    if !a.block_dims.is_empty() && targets.iter().any(|t| matches!(t.1, Device::Cpu)) {
        json.extend(block_table(&a)?);
    }
    if let Some(path) = &a.json {
        let text = format!("[\n  {}\n]\n", json.join(",\n  "));
        fwsvm::output::write_output(path, |f| std::io::Write::write_all(f, text.as_bytes()))?;
    }
    Ok(())
}

/// The working-set block on the CPU against the measured FMA peak: prints the table, returns
/// its JSON objects.
fn block_table(a: &KernelsArgs) -> Result<Vec<String>> {
    let peak = fwsvm::bench::fma_peak(3);
    println!(
        "CPU working-set blocks (dense rows, rbf, {} precision): FMA peak measured {:.1} GFLOP/s \
         f32, {:.1} GFLOP/s f64 ({} on {} threads); GFLOP/s counts the products' 2·d per kernel \
         value",
        format!("{:?}", a.precision).to_lowercase(),
        peak.f32_flops / 1e9,
        peak.f64_flops / 1e9,
        peak.isa,
        peak.threads
    );
    println!(
        "| m | d | q | per column (block + update) | kernel values/s | GFLOP/s | of f32 peak | of f64 peak |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut json = Vec::new();
    let m = a.block_rows;
    // The tiles alone on one thread, per d: the block's ceiling on this machine.
    let per_thread = peak.f32_flops / peak.threads.max(1) as f64;
    let tiles: Vec<(usize, f64)> = a
        .block_dims
        .iter()
        .filter_map(|&d| {
            fwsvm::bench::tile_rate(d, Duration::from_secs_f64(a.min_time)).map(|r| (d, r))
        })
        .collect();
    for &d in &a.block_dims {
        let ds = synthetic(m, d, 1.0, a.seed);
        let prob = Problem::new(
            &ds,
            ds.labels.clone(),
            Kernel::Rbf {
                gamma: 1.0 / d as f64,
            },
            1.0,
        )?;
        let col_bytes = m as u64 * if a.precision == Precision::F64 { 8 } else { 4 };
        for &q in &a.block_q {
            let q = q.min(m / 2).max(1);
            let s = measure_batched(&Device::Cpu, &prob, a.precision, q, col_bytes, a.min_time)?;
            let flops = 2.0 * (m * d) as f64 / s;
            println!(
                "| {m} | {d} | {q} | {} | {:.3e} | {} | {} % | {} % |",
                fmt_s(s),
                m as f64 / s,
                sig(flops / 1e9),
                sig(100.0 * flops / peak.f32_flops),
                sig(100.0 * flops / peak.f64_flops),
            );
            json.push(format!(
                "{{\"table\": \"block\", \"m\": {m}, \"d\": {d}, \"q\": {q}, \"column_s\": {s}, \"gflops\": {}, \"peak_f32_gflops\": {}, \"peak_f64_gflops\": {}, \"isa\": \"{}\"}}",
                flops / 1e9,
                peak.f32_flops / 1e9,
                peak.f64_flops / 1e9,
                peak.isa
            ));
        }
    }
    if !tiles.is_empty() {
        println!();
        println!(
            "f32 RBF tiles alone (one thread, eight columns a batch over a block of rows in the \
             core's cache, finished in registers), against one thread's share of the peak:"
        );
        println!("| d | GFLOP/s | of one thread's f32 peak |");
        println!("|---|---|---|");
        for &(d, r) in &tiles {
            println!(
                "| {d} | {} | {} % |",
                sig(r / 1e9),
                sig(100.0 * r / per_thread)
            );
            json.push(format!(
                "{{\"table\": \"tiles\", \"d\": {d}, \"gflops\": {}, \"peak_f32_gflops_per_thread\": {}}}",
                r / 1e9,
                per_thread / 1e9
            ));
        }
    }
    println!();
    Ok(json)
}

/// Refuses arguments the measurement cannot use.
fn check_kernels_args(a: &KernelsArgs) -> Result<()> {
    if !(a.density > 0.0 && a.density <= 1.0) {
        return Err(Error::param(format!(
            "--density must be in (0, 1], got {}",
            a.density
        )));
    }
    if !(a.min_time > 0.0 && a.min_time.is_finite()) {
        return Err(Error::param(format!(
            "--min-time must be a positive number of seconds, got {}",
            a.min_time
        )));
    }
    // Two columns fit the smallest cache: below three rows every column would be a hit.
    if let Some(&bad) = a.rows.iter().find(|&&m| m < 3) {
        return Err(Error::param(format!(
            "--rows: need at least 3 rows, got {bad}"
        )));
    }
    if let Some(&bad) = a.dims.iter().find(|&&d| d == 0) {
        return Err(Error::param(format!(
            "--dims: need at least 1 feature, got {bad}"
        )));
    }
    if a.block_dims.contains(&0) {
        return Err(Error::param(
            "--block-dims: need at least 1 feature, got 0".into(),
        ));
    }
    if a.block_q.contains(&0) {
        return Err(Error::param(
            "--block-q: need at least 1 column, got 0".into(),
        ));
    }
    if !a.block_dims.is_empty() && a.block_rows < 3 {
        return Err(Error::param(format!(
            "--block-rows: need at least 3 rows, got {}",
            a.block_rows
        )));
    }
    Ok(())
}

/// The backends to measure: (name, device, memory bandwidth in bytes/s, where it came from).
fn kernel_targets(a: &KernelsArgs) -> Result<Vec<(String, Device, f64, String)>> {
    let precision = a.precision;
    let mut targets: Vec<(String, Device, f64, String)> = Vec::new();
    if a.backend != BenchBackend::Gpu {
        let (peak, src) = match a.cpu_peak {
            Some(p) => (p * 1e9, "given".to_string()),
            None => (host_bandwidth(3), "measured: parallel streaming sum".into()),
        };
        targets.push((
            format!("cpu ({} threads)", rayon::current_num_threads()),
            Device::Cpu,
            peak,
            src,
        ));
    }
    if a.backend != BenchBackend::Cpu {
        let arg = if a.backend == BenchBackend::Auto {
            BackendArg::Auto
        } else {
            BackendArg::Gpu
        };
        #[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
        let dev = open_device(arg, a.device.as_deref(), precision, true, Some(0), false)?;
        #[cfg(feature = "gpu")]
        if let Device::Gpu { ctx, .. } = &dev {
            let published = fwsvm::bench::known_gpu_peak(&ctx.adapter.name)
                .map(|p| format!("; published {:.0} GB/s", p / 1e9))
                .unwrap_or_default();
            let (peak, src) = match a.gpu_peak {
                Some(p) => (p * 1e9, format!("given{published}")),
                None => (
                    ctx.copy_bandwidth(256 << 20, 3)?,
                    format!("measured: device-to-device copies, read + write{published}"),
                ),
            };
            targets.push((dev.describe(), dev.clone(), peak, src));
        }
    }
    Ok(targets)
}

/// Measures one (layout, d, m) on one backend, prints its table row and returns its JSON
/// object.
fn kernel_row(
    a: &KernelsArgs,
    (name, dev, peak): (&str, &Device, f64),
    layout: LayoutArg,
    d: usize,
    m: usize,
) -> Result<String> {
    let precision = a.precision;
    let density = if layout == LayoutArg::Dense {
        1.0
    } else {
        a.density
    };
    let ds = synthetic(m, d, density, a.seed);
    let gamma = 1.0 / d as f64;
    let kernel = match a.kernel {
        KernelKind::Rbf => Kernel::Rbf { gamma },
        KernelKind::Poly => Kernel::Poly {
            gamma,
            coef0: 1.0,
            degree: 3,
        },
        KernelKind::Linear => Kernel::Linear,
        KernelKind::Sigmoid => Kernel::Sigmoid { gamma, coef0: 0.0 },
    };
    let prob = Problem::new(&ds, ds.labels.clone(), kernel, 1.0)?;
    let t = measure(dev, &prob, precision, a.min_time)?;
    let col_bytes = m as u64 * if precision == Precision::F64 { 8 } else { 4 };
    let q = a
        .batch
        .min(((1u64 << 30) / col_bytes).saturating_sub(2) as usize / 2);
    let batched = if q >= 2 {
        Some(measure_batched(
            dev, &prob, precision, q, col_bytes, a.min_time,
        )?)
    } else {
        None
    };
    let bytes = data_bytes(&ds) as f64;
    let gbs = bytes / t.column_s / 1e9;
    let layout = if ds.is_dense() { "dense" } else { "csr" };
    let nnz_row = ds.nnz() as f64 / m as f64;
    println!(
        "| {layout} | {m} | {d} | {nnz_row:.1} | {} | {} | {} | {} % | {:.3e} | {} | {} | {} | {} | {} |",
        sig(bytes / 1e6),
        fmt_s(t.column_s),
        sig(gbs),
        sig(100.0 * gbs * 1e9 / peak),
        m as f64 / t.column_s,
        batched.map_or("-".into(), |b| format!("{} ({q})", fmt_s(b))),
        batched.map_or("-".into(), |b| format!("{:.3e}", m as f64 / b)),
        batched.map_or("-".into(), |b| sig(bytes / b / 1e9)),
        fmt_s(t.iteration_s),
        fmt_s(t.round_trip_s),
    );
    Ok(format!(
        "{{\"backend\": {:?}, \"peak_gbs\": {}, \"layout\": \"{layout}\", \"m\": {m}, \"d\": {d}, \"nnz_per_row\": {nnz_row}, \"data_bytes\": {bytes}, \"column_s\": {}, \"column_gbs\": {gbs}, \"column_of_peak\": {}, \"batch_q\": {q}, \"batched_column_s\": {}, \"iteration_s\": {}, \"round_trip_s\": {}}}",
        name,
        peak / 1e9,
        t.column_s,
        gbs * 1e9 / peak,
        batched.map_or("null".into(), |b| b.to_string()),
        t.iteration_s,
        t.round_trip_s,
    ))
}

fn measure(
    dev: &Device,
    prob: &Problem<'_>,
    precision: Precision,
    min_time: f64,
) -> Result<KernelTiming> {
    let min = Duration::from_secs_f64(min_time);
    with_backend(dev, prob, precision, 0, |be| time_backend(be, min))
}

fn measure_batched(
    dev: &Device,
    prob: &Problem<'_>,
    precision: Precision,
    q: usize,
    col_bytes: u64,
    min_time: f64,
) -> Result<f64> {
    let min = Duration::from_secs_f64(min_time);
    let cache_bytes = ((2 * q as u64 + 4) * col_bytes) as usize;
    with_backend(dev, prob, precision, cache_bytes, |be| {
        time_batched(be, q, min)
    })
}

/// Runs `f` on a backend of `dev` over `prob` with a column cache of `cache_bytes`.
fn with_backend<T>(
    dev: &Device,
    prob: &Problem<'_>,
    precision: Precision,
    cache_bytes: usize,
    f: impl FnOnce(&mut dyn fwsvm::backend::Solvable) -> Result<T>,
) -> Result<T> {
    match dev {
        Device::Cpu => {
            let mut be = cpu_backend(
                prob,
                CpuConfig {
                    cache_bytes,
                    precision: Some(precision),
                    ..CpuConfig::default()
                },
            );
            f(be.as_mut())
        }
        #[cfg(feature = "gpu")]
        Device::Gpu { ctx, cfg, .. } => {
            let mut be = fwsvm::backend::gpu::GpuBackend::new(
                prob,
                ctx,
                fwsvm::backend::gpu::GpuConfig {
                    cache_bytes,
                    ..*cfg
                },
            )?;
            f(&mut be)
        }
    }
}

/// Three significant digits for small values, one decimal otherwise.
fn sig(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn fmt_s(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if s < 1e-6 {
        format!("{:.0} ns", s * 1e9)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}
