//! GPU backend against the CPU backend: the same primitives, the same vertex choices, the same
//! optima, the same labels on real data. They run wherever wgpu finds an adapter (lavapipe
//! counts); on a machine without one they are reported ignored, with the reason printed once;
//! in CI (`CI=true`, where `.ci/run` installs lavapipe) a missing adapter is a failure.

mod common;

use common::problems::{problems, random_dataset, reference_optimum};
use fwsvm::active::ActiveSet;
use fwsvm::backend::cpu::{CpuConfig, Precision, cpu_backend};
use fwsvm::backend::gpu::{DeviceSelector, GpuBackend, GpuConfig, GpuContext};
use fwsvm::backend::{
    Backend, BackendStats, Certify, Columns, Device, LoopPlace, Marks, Ranks, Reduction, Solvable,
    Update,
};
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::{Algorithm, SolverParams, StopReason, solve, solve_plain};
use std::sync::{Arc, OnceLock};

/// The adapter every test shares (lavapipe in CI); `main` runs the tests only where there is
/// one.
fn context() -> Option<&'static GpuContext> {
    static CTX: OnceLock<Option<GpuContext>> = OnceLock::new();
    CTX.get_or_init(|| GpuContext::open(&DeviceSelector::Any).expect("opening the adapter"))
        .as_ref()
}

fn main() -> std::process::ExitCode {
    let missing = context()
        .is_none()
        .then(|| "GPU tests: no GPU adapter (install mesa-vulkan-drivers libvulkan1)".to_string());
    common::run_tests(
        trials![
            primitives_match_the_cpu_with_tiny_chunks,
            first_fifty_vertex_choices_are_identical,
            every_variant_reaches_the_same_optimum_on_the_gpu,
            f32_gradient_reaches_the_optimum,
            ijcnn1_labels_agree_across_backends,
            gl_backend_runs_and_refuses_f64,
            gpu_prediction_matches_the_cpu,
            marked_reduction_matches_the_cpu,
            cvm_sparse_fw_and_simplesvm_match_the_cpu,
            sampled_kernel_blocks_match_the_cpu,
            sampled_iterations_match_the_cpu,
            shared_data_views_match_separate_uploads,
            shrinking_on_the_gpu_matches_the_cpu,
            batched_columns_equal_single_columns_on_the_gpu,
            device_requests_open_the_gpu_and_sample_weights_train_there,
            a_gpu_per_rank_reaches_the_single_process_gpu_optimum,
            working_set_solver_matches_the_cpu,
            one_dispatch_blocks_equal_blocks_by_columns,
            compacted_candidates_give_the_run_of_the_whole_gradient,
            four_column_and_list_updates_equal_updates_by_pairs,
            the_device_loop_replays_its_rule_on_the_host,
            the_device_loop_reaches_the_cpu_optimum,
        ],
        missing,
    )
}

fn cpu_exact<'a>(prob: &'a Problem<'a>) -> Box<dyn Marks + 'a> {
    cpu_backend(
        prob,
        CpuConfig {
            cache_bytes: 1 << 20,
            precision: Some(Precision::F64),
            batched: false,
        },
    )
}

fn gpu<'a>(
    prob: &'a Problem<'a>,
    ctx: &'a GpuContext,
    wide: bool,
    chunk: Option<u64>,
) -> GpuBackend<'a> {
    GpuBackend::new(
        prob,
        ctx,
        GpuConfig {
            cache_bytes: 1 << 20,
            precision: if wide { Precision::F64 } else { Precision::F32 },
            max_chunk_bytes: chunk,
            // The working set's candidates by the device's compaction at every size.
            compact_min_rows: 0,
            loop_place: LoopPlace::Host,
        },
    )
    .expect("GPU backend")
}

/// Every primitive of the seam on data split into many tiny chunks (so the split across
/// bindings and dispatches is exercised), dense and CSR, every kernel, both gradient types.
fn primitives_match_the_cpu_with_tiny_chunks() {
    let Some(ctx) = context() else { return };
    for (sparse, kernel) in [
        (false, Kernel::Rbf { gamma: 0.7 }),
        (true, Kernel::Rbf { gamma: 0.3 }),
        (
            false,
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
        ),
        (true, Kernel::Linear),
        (
            false,
            Kernel::Sigmoid {
                gamma: 0.2,
                coef0: -0.3,
            },
        ),
    ] {
        let ds = random_dataset(3000, 13, sparse, 3);
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, 2.0)
            .unwrap()
            // Class weights: the diagonal 1/C_i differs by label (6 and 1 here).
            .with_class_weights(3.0, 0.5)
            .unwrap();
        for wide in [false, true] {
            let tol = if wide { 1e-10 } else { 2e-5 };
            let tag = format!("{kernel:?} sparse {sparse} f64 {wide}");
            let mut cpu = cpu_exact(&prob);
            let mut g = gpu(&prob, ctx, wide, Some(1024));
            assert!(g.memory_plan().chunks >= 10, "{tag}: {:?}", g.memory_plan());
            let mut a = ActiveSet::new(prob.len());
            a.set(17, 0.6);
            a.set(2999, 0.4);
            for be in [cpu.as_mut(), &mut g as &mut dyn Backend] {
                be.enable_prev();
                be.set_alpha(&a).unwrap();
            }
            // Three iterations' worth of updates: two columns, g⁻ with rotation, cache reuse.
            let ups = [
                Update {
                    scale: 0.5,
                    cols: [Some((2000, 0.25)), Some((17, 0.25))],
                    prev_coef: 0.1,
                    rotate: true,
                },
                Update::one(0.9, 1234, 0.1),
                Update::two(1.0, 2000, 0.05, 17, -0.05),
            ];
            a = ActiveSet::new(prob.len());
            for (k, i) in [(17, 0.3), (2000, 0.3), (1234, 0.1), (2999, 0.3)] {
                a.set(k, i);
            }
            let idx: Vec<usize> = (0..prob.len()).step_by(7).chain([2999]).collect();
            let mut reds: Vec<Reduction> = Vec::new();
            let mut vecs: Vec<[Vec<f64>; 6]> = Vec::new();
            for be in [cpu.as_mut(), &mut g as &mut dyn Backend] {
                for u in &ups {
                    be.update(u).unwrap();
                }
                reds.push(be.reduce(&a).unwrap());
                let mut v: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; idx.len()]);
                be.gather(&idx, &mut v[0]).unwrap();
                be.gather_prev(&idx, &mut v[1]).unwrap();
                be.column_entries(555, &idx, &mut v[2]).unwrap();
                // The fused gather (one submit on the GPU), with a column not yet computed.
                let [_, _, _, a, b, c] = &mut v;
                be.gather_fused(&idx, a, Some(b), Some((556, c))).unwrap();
                assert_eq!(v[3], v[0], "{tag}: fused g");
                assert_eq!(v[4], v[1], "{tag}: fused g⁻");
                vecs.push(v);
            }
            for (k, (cpu, gpu)) in vecs[0].iter().zip(&vecs[1]).enumerate().take(6) {
                for (n, (x, y)) in cpu.iter().zip(gpu).enumerate() {
                    assert!(
                        (x - y).abs() <= tol * (1.0 + x.abs()),
                        "{tag}: vector {k}, entry {} : cpu {x} gpu {y}",
                        idx[n]
                    );
                }
            }
            let (c, d) = (reds[0], reds[1]);
            assert_eq!((c.s, c.v), (d.s, d.v), "{tag}: {c:?} vs {d:?}");
            for (x, y) in [
                (c.g_s, d.g_s),
                (c.g_v, d.g_v),
                (c.alpha_g, d.alpha_g),
                (c.alpha_g_prev, d.alpha_g_prev),
            ] {
                assert!(
                    (x - y).abs() <= tol * (1.0 + x.abs()),
                    "{tag}: {c:?} vs {d:?}"
                );
            }
            let st = g.stats();
            assert_eq!(st.updates, 3);
            // Three update columns, column 555 and the fused gather's column 556.
            assert_eq!(st.columns_computed, 5, "{tag}: {st:?}");
        }
    }
}

/// Wraps a backend and records the vertices each update moves along (the columns it uses):
/// the vertex choices of the variant's steps.
struct Recorder<'a> {
    inner: Box<dyn Solvable + 'a>,
    log: Vec<(usize, usize)>,
    reds: Vec<Reduction>,
}

impl<'a> Recorder<'a> {
    fn new(inner: Box<dyn Solvable + 'a>) -> Self {
        Recorder {
            inner,
            log: Vec::new(),
            reds: Vec::new(),
        }
    }
}

impl Backend for Recorder<'_> {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn name(&self) -> String {
        self.inner.name()
    }
    fn q_diag(&self, i: usize) -> f64 {
        self.inner.q_diag(i)
    }
    fn q(&self, i: usize, j: usize) -> f64 {
        self.inner.q(i, j)
    }
    fn set_alpha(&mut self, a: &ActiveSet) -> fwsvm::Result<()> {
        self.inner.set_alpha(a)
    }
    fn enable_prev(&mut self) {
        self.inner.enable_prev()
    }
    fn update(&mut self, u: &Update) -> fwsvm::Result<()> {
        let col = |k: usize| u.cols[k].map_or(usize::MAX, |c| c.0);
        self.log.push((col(0), col(1)));
        self.inner.update(u)
    }
    fn reduce(&mut self, a: &ActiveSet) -> fwsvm::Result<Reduction> {
        let r = self.inner.reduce(a)?;
        self.reds.push(r);
        Ok(r)
    }
    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.inner.gather(idx, out)
    }
    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.inner.gather_prev(idx, out)
    }
    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.inner.column_entries(j, idx, out)
    }
    fn gather_fused(
        &mut self,
        idx: &[usize],
        g: &mut [f64],
        prev: Option<&mut [f64]>,
        col: Option<(usize, &mut [f64])>,
    ) -> fwsvm::Result<()> {
        self.inner.gather_fused(idx, g, prev, col)
    }
    /// ws compared across backends: both choose away candidates by the GPU's rule (the
    /// highest gradients), so that their vertex choices can match.
    fn hints(&self) -> fwsvm::backend::Hints {
        fwsvm::backend::Hints {
            entries_are_local: false,
            ..self.inner.hints()
        }
    }
    fn stats(&self) -> BackendStats {
        self.inner.stats()
    }
}

impl Columns for Recorder<'_> {
    fn prefetch_columns(&mut self, js: &[usize]) -> fwsvm::Result<usize> {
        self.inner.prefetch_columns(js)
    }

    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> fwsvm::Result<()> {
        self.inner.update_many(scale, cols)
    }

    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> fwsvm::Result<()> {
        self.inner.lowest(k, out)
    }

    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> fwsvm::Result<usize> {
        self.inner.block(w, out, g_w)
    }
}

impl Ranks for Recorder<'_> {}

impl Certify for Recorder<'_> {}

/// With the f64 gradient (f64 kernel arithmetic and columns, as the CPU's --precision f64) the
/// first 50 iterations choose the same vertices on both backends, for every variant on every
/// small problem — except at an exact tie (two points whose gradients agree to f64 rounding,
/// where the summation order decides; seen once, poly dense / swap2 at step 19). The f32 gradient rounds at ~1e-7 relative, so numerical near-ties (several
/// active g_i all but equal) may go the other way: there at least 90 % of all steps agree.
fn first_fifty_vertex_choices_are_identical() {
    let Some(ctx) = context() else { return };
    let (mut same32, mut total32) = (0, 0);
    let mut ties64 = 0;
    for (name, ds, kernel, c, _) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        for alg in Algorithm::FW {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-300,
                rel_eps: Some(f64::INFINITY),
                max_iter: 50,
                seed: 5,
                init_size: 4,
                certify: false,
                ..Default::default()
            };
            let mut cpu = Recorder::new(cpu_exact(&prob));
            solve_plain(&prob, &mut cpu, &params, &mut []).unwrap();
            for wide in [true, false] {
                let mut g = Recorder::new(Box::new(gpu(&prob, ctx, wide, None)));
                solve_plain(&prob, &mut g, &params, &mut []).unwrap();
                assert_eq!(
                    cpu.log.len(),
                    50,
                    "{name} / {alg}: {} updates",
                    cpu.log.len()
                );
                if wide {
                    let first = cpu
                        .log
                        .iter()
                        .zip(&g.log)
                        .take_while(|(a, b)| a == b)
                        .count();
                    if first < 50 {
                        eprintln!(
                            "{name} / {alg} f64: first difference at {first}: {:?} vs {:?}\n{:?}\n{:?}",
                            cpu.log[first], g.log[first], cpu.reds[first], g.reds[first]
                        );
                        // Accepted only at an exact tie: both backends see the same minimum
                        // (to f64 rounding of the sums) at two different points, and a
                        // summation order decides. The runs then legitimately part.
                        let (a, b) = (&cpu.reds[first], &g.reds[first]);
                        let tie = (a.g_s - b.g_s).abs() <= 1e-13 * a.g_s.abs().max(1e-300)
                            && (a.g_v - b.g_v).abs() <= 1e-13 * a.g_v.abs().max(1e-300);
                        assert!(
                            tie,
                            "{name} / {alg} (GPU f64 gradient): vertex choices differ"
                        );
                        ties64 += 1;
                    }
                } else {
                    let same = cpu.log.iter().zip(&g.log).filter(|(a, b)| a == b).count();
                    let first = cpu
                        .log
                        .iter()
                        .zip(&g.log)
                        .take_while(|(a, b)| a == b)
                        .count();
                    eprintln!(
                        "{name} / {alg} f32: {same}/{} identical, first {first}",
                        cpu.log.len()
                    );
                    same32 += same;
                    total32 += cpu.log.len();
                }
            }
        }
    }
    assert!(
        same32 * 10 >= total32 * 9,
        "f32 gradient: only {same32}/{total32} steps agree with the CPU"
    );
    // Exact ties are rare: at most one (variant, problem) pair in the whole grid.
    assert!(ties64 <= 1, "{ties64} runs parted at f64 ties");
}

/// Every variant on the GPU (f64 gradient) reaches the same optimum as the CPU and the
/// independent reference: objective within 1e-5 relative, at the targets of tests/variants.rs.
fn every_variant_reaches_the_same_optimum_on_the_gpu() {
    let Some(ctx) = context() else { return };
    for (name, ds, kernel, c, interior) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let (f_ref, _) = reference_optimum(&prob);
        for alg in Algorithm::FW {
            let sublinear = !interior && matches!(alg, Algorithm::Fw | Algorithm::Partan);
            if sublinear {
                // O(1/k): hundreds of thousands of iterations, minutes on a software adapter;
                // the vertex test above covers their first iterations.
                continue;
            }
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 5e-9,
                max_iter: 200_000,
                seed: 5,
                init_size: 4,
                ..Default::default()
            };
            let tag = format!("{name} / {alg}");
            let mut cpu = cpu_exact(&prob);
            let rc = solve(&prob, cpu.as_mut(), &params, &mut []).unwrap();
            let mut g = gpu(&prob, ctx, true, None);
            let rg = solve(&prob, &mut g, &params, &mut []).unwrap();
            assert_eq!(rg.stop, StopReason::Converged, "{tag}: {:?}", rg.stop);
            let (fc, fg) = (rc.certified_f.unwrap(), rg.certified_f.unwrap());
            assert!(
                (fc - fg).abs() <= 1e-5 * fc,
                "{tag}: cpu f {fc}, gpu f {fg}"
            );
            assert!(
                (fg - f_ref).abs() <= 1e-5 * f_ref,
                "{tag}: gpu f {fg}, reference {f_ref}"
            );
            assert!(
                rg.certified_gap.unwrap() <= 1e-7,
                "{tag}: {:?}",
                rg.certified_gap
            );
        }
    }
}

/// The f32 gradient (the default) reaches the optimum to within 1e-5 relative too.
fn f32_gradient_reaches_the_optimum() {
    let Some(ctx) = context() else { return };
    for (name, ds, kernel, c, _) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let (f_ref, _) = reference_optimum(&prob);
        for alg in [Algorithm::Mfw, Algorithm::Swap2] {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-6,
                max_iter: 100_000,
                seed: 5,
                init_size: 4,
                ..Default::default()
            };
            let mut g = gpu(&prob, ctx, false, None);
            let r = solve(&prob, &mut g, &params, &mut []).unwrap();
            let f = r.certified_f.unwrap();
            assert!(
                (f - f_ref).abs() <= 1e-5 * f_ref,
                "{name} / {alg}: f {f} vs {f_ref}"
            );
        }
    }
}

/// ijcnn1 (49,990 × 22), C = 100, ε = 1e-4, on both backends (GPU with its default f32
/// gradient). At this ε a run stops anywhere inside the gap, and two CPU runs that differ only
/// in their seed agree on 98.9–99.2 % of the test labels (99.84 % at ε = 1e-6): the GPU must
/// agree with the CPU at least that well (−0.3 pt), and on ≥ 98.5 %.
fn ijcnn1_labels_agree_across_backends() {
    let Some(ctx) = context() else { return };
    let (Some(trn), Some(tst)) = (
        common::dataset("ijcnn1.trn.bz2"),
        common::dataset("ijcnn1.tst.bz2"),
    ) else {
        return;
    };
    use fwsvm::data::{ReadOptions, read_dataset};
    use fwsvm::train::{TrainParams, train};
    let train_ds = read_dataset(&trn, &ReadOptions::default()).unwrap();
    let test_ds = read_dataset(&tst, &ReadOptions::default()).unwrap();
    let mut params = TrainParams {
        c: 100.0,
        ..Default::default()
    };
    params.solver.algorithm = Some(Algorithm::Partan);
    let (m_cpu, _) = train(&train_ds, &params, &mut |_| Vec::new()).unwrap();
    let mut seed2 = params.clone();
    seed2.solver.seed = 2;
    let (m_cpu2, _) = train(&train_ds, &seed2, &mut |_| Vec::new()).unwrap();
    // A context of its own: `Device` wants to own it.
    let own = GpuContext::open(&DeviceSelector::Name(ctx.adapter.name.clone()))
        .unwrap()
        .unwrap();
    params.device = Device::Gpu {
        ctx: Arc::new(own),
        cfg: GpuConfig::default(),
        fallback: false,
        shared: None,
    };
    let (m_gpu, rep) = train(&train_ds, &params, &mut |_| Vec::new()).unwrap();
    assert_eq!(rep[0].result.stop, StopReason::Converged);
    let agree = |a: &[f64], b: &[f64]| {
        a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
    };
    let cpu = m_cpu.predict(&test_ds);
    let gpu_vs_cpu = agree(&cpu, &m_gpu.predict(&test_ds));
    let cpu_vs_cpu = agree(&cpu, &m_cpu2.predict(&test_ds));
    eprintln!(
        "ijcnn1 test labels: GPU vs CPU {:.3} %, CPU seed 1 vs seed 2 {:.3} %",
        100.0 * gpu_vs_cpu,
        100.0 * cpu_vs_cpu
    );
    assert!(
        gpu_vs_cpu >= 0.985,
        "GPU vs CPU {:.3} %",
        100.0 * gpu_vs_cpu
    );
    assert!(
        gpu_vs_cpu >= cpu_vs_cpu - 0.003,
        "GPU vs CPU {:.3} % < CPU vs CPU {:.3} % − 0.3 pt",
        100.0 * gpu_vs_cpu,
        100.0 * cpu_vs_cpu
    );
}

/// wgpu's GL backend (llvmpipe through EGL): the same vertex choices with the f32 gradient,
/// and a clear error for --precision f64 (GL has no f64). Skipped, loudly, where there is no GL
/// adapter: CI requires only Vulkan.
fn gl_backend_runs_and_refuses_f64() {
    let ctx = match GpuContext::open_on(&DeviceSelector::Any, Some(wgpu::Backends::GL)) {
        Ok(Some(c)) => c,
        other => {
            common::skip(&format!(
                "GL backend test: no GL adapter ({:?})",
                other.err()
            ));
            return;
        }
    };
    let e = ctx.pipelines(true).err().expect("GL has no SHADER_F64");
    assert!(e.to_string().contains("SHADER_F64"), "{e}");
    let (name, ds, kernel, c, _) = problems().remove(2);
    let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
    let params = SolverParams {
        algorithm: Some(Algorithm::Swap),
        eps: 1e-6,
        seed: 5,
        init_size: 4,
        ..Default::default()
    };
    let mut cpu = cpu_exact(&prob);
    let rc = solve(&prob, cpu.as_mut(), &params, &mut []).unwrap();
    let mut g = gpu(&prob, &ctx, false, None);
    let rg = solve(&prob, &mut g, &params, &mut []).unwrap();
    let (fc, fg) = (rc.certified_f.unwrap(), rg.certified_f.unwrap());
    assert!(
        (fc - fg).abs() <= 1e-5 * fc,
        "{name} on GL: cpu f {fc}, gpu f {fg}"
    );
}

/// Prediction on the device against the CPU's: the same decision values (to f32 or f64
/// rounding) for every pair of a three-class model, dense and sparse test data split into tiny
/// chunks, and a test set with fewer features than the model's SVs.
fn gpu_prediction_matches_the_cpu() {
    let Some(ctx) = context() else { return };
    use fwsvm::train::{Gamma, KernelKind, TrainParams, train};
    for (sparse, kernel) in [
        (false, KernelKind::Rbf),
        (true, KernelKind::Rbf),
        (false, KernelKind::Poly),
        (true, KernelKind::Linear),
    ] {
        let mut ds = random_dataset(240, 6, sparse, 11);
        for (i, y) in ds.labels.iter_mut().enumerate() {
            *y = [3.0, 7.0, 5.0][i % 3];
        }
        let params = TrainParams {
            kernel,
            gamma: Gamma::Value(0.4),
            coef0: 1.0,
            degree: 2,
            c: 10.0,
            ..TrainParams::default()
        };
        let (model, _) = train(&ds, &params, &mut |_| Vec::new()).expect("training");
        assert_eq!(model.n_classes(), 3);
        let narrow = random_dataset(90, 4, sparse, 12);
        for (test, what) in [(&ds, "training rows"), (&narrow, "4-feature rows")] {
            let (cpu_labels, cpu_dec) = model.predict_with_decisions(test);
            for wide in [false, true] {
                let cfg = GpuConfig {
                    cache_bytes: 0,
                    precision: if wide { Precision::F64 } else { Precision::F32 },
                    max_chunk_bytes: Some(512),
                    ..GpuConfig::default()
                };
                let (labels, dec) =
                    fwsvm::predict::gpu::predict(&model, test, ctx, cfg, None).expect("gpu");
                assert_eq!(dec.len(), test.len());
                let scale = cpu_dec
                    .iter()
                    .flatten()
                    .fold(0.0f64, |m, v| m.max(v.abs()))
                    .max(1.0);
                let tol = if wide { 1e-9 } else { 1e-4 } * scale;
                let mut worst = 0.0f64;
                for (r, (a, b)) in cpu_dec.iter().zip(&dec).enumerate() {
                    assert_eq!(a.len(), 3);
                    for (x, y) in a.iter().zip(b) {
                        worst = worst.max((x - y).abs());
                    }
                    let margin = a.iter().fold(f64::INFINITY, |m, v| m.min(v.abs()));
                    if margin > tol {
                        assert_eq!(labels[r], cpu_labels[r], "row {r}, {what}");
                    }
                }
                assert!(
                    worst <= tol,
                    "{kernel:?} sparse={sparse} wide={wide} {what}: max decision difference {worst:e} > {tol:e}"
                );
            }
        }
    }
}

/// The marked reduction (sparse FW's and SimpleSVM's violator search) on the device equals the
/// CPU's, indices included, with the data forced into 1 KiB chunks.
fn marked_reduction_matches_the_cpu() {
    use fwsvm::backend::mark;
    let Some(ctx) = context() else { return };
    for sparse in [false, true] {
        let ds = random_dataset(900, 6, sparse, 17);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.4 }, 3.0).unwrap();
        let mut alpha = ActiveSet::new(prob.len());
        for (k, i) in [5usize, 77, 300, 899].into_iter().enumerate() {
            alpha.set(i, 0.25 + 0.01 * k as f64);
        }
        let mut cpu = cpu_exact(&prob);
        let mut g = gpu(&prob, ctx, true, Some(1024));
        let marks: Vec<(usize, u8)> = (0..prob.len()).map(|i| (i, (i * 5 % 8) as u8)).collect();
        for be in [&mut *cpu as &mut dyn Marks, &mut g as &mut dyn Marks] {
            be.set_alpha(&alpha).unwrap();
            be.fill_marks(mark::LOW).unwrap();
            be.set_marks(&marks).unwrap();
            be.update(&Update::two(0.5, 3, 0.25, 600, 0.25)).unwrap();
        }
        for shift in [0.0, 0.8, -1.5] {
            let a = cpu.reduce_marked(shift).unwrap();
            let b = g.reduce_marked(shift).unwrap();
            assert_eq!((a.low.0, a.mid.0, a.high.0), (b.low.0, b.mid.0, b.high.0));
            for (x, y) in [(a.low.1, b.low.1), (a.mid.1, b.mid.1), (a.high.1, b.high.1)] {
                assert!((x - y).abs() <= 1e-12, "{x} vs {y}");
            }
        }
        g.fill_marks(mark::NONE).unwrap();
        let e = g.reduce_marked(0.0).unwrap();
        assert_eq!(
            (e.low.0, e.mid.0, e.high.0),
            (usize::MAX, usize::MAX, usize::MAX)
        );
    }
}

/// CVM, sparse re-weighted FW and SimpleSVM run on the device through the same primitives and
/// end where the CPU does (f64 gradient: the same objective to 1e-9 relative).
fn cvm_sparse_fw_and_simplesvm_match_the_cpu() {
    use fwsvm::solver::simple_svm::{LinearSolver, SimpleParams, Violator};
    let Some(ctx) = context() else { return };
    let ds = random_dataset(300, 4, false, 29);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.8 }, 5.0).unwrap();
    for alg in [Algorithm::Cvm, Algorithm::SparseFw] {
        let params = SolverParams {
            algorithm: Some(alg),
            eps: 1e-8,
            seed: 3,
            ..Default::default()
        };
        let rc = solve(&prob, cpu_exact(&prob).as_mut(), &params, &mut []).unwrap();
        let mut g = gpu(&prob, ctx, true, Some(4096));
        let rg = solve(&prob, &mut g, &params, &mut []).unwrap();
        assert_eq!(rg.stop, StopReason::Converged, "{alg}");
        let (fc, fg) = (rc.certified_f.unwrap(), rg.certified_f.unwrap());
        assert!((fc - fg).abs() <= 1e-6 * fc, "{alg}: cpu {fc}, gpu {fg}");
        assert_eq!(rc.alpha.len(), rg.alpha.len(), "{alg}: SVs");
    }
    let csvm = Problem::c_svm(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.8 }, 2.0).unwrap();
    for violator in [Violator::Greedy, Violator::Queue] {
        let params = SolverParams {
            algorithm: Some(Algorithm::SimpleSvm),
            eps: 1e-7,
            simple: SimpleParams {
                violator,
                solver: LinearSolver::Cholesky,
            },
            ..Default::default()
        };
        let rc = solve(&csvm, cpu_exact(&csvm).as_mut(), &params, &mut []).unwrap();
        let mut g = gpu(&csvm, ctx, true, None);
        let rg = solve(&csvm, &mut g, &params, &mut []).unwrap();
        assert_eq!(rg.stop, StopReason::Converged, "{violator:?}");
        let (fc, fg) = (rc.certified_f.unwrap(), rg.certified_f.unwrap());
        assert!(
            (fc - fg).abs() <= 1e-9 * fc.abs(),
            "{violator:?}: cpu {fc}, gpu {fg}"
        );
        assert!(
            (rc.rho.unwrap() - rg.rho.unwrap()).abs() <= 1e-7,
            "{violator:?}: rho"
        );
    }
}

/// The device's kernel blocks of the sampled iterations equal the CPU's (f64: 1e-10
/// relative to the block's scale; f32: 1e-5), dense and CSR, every kernel, both the
/// one-invocation-per-row path (a step's few columns) and the workgroup-per-row path (a draw's
/// |S| × |A| block), with a slot buffer small enough that rows are evicted and the buffer
/// grows; a block needing more rows than the binding holds runs on the CPU.
fn sampled_kernel_blocks_match_the_cpu() {
    use fwsvm::backend::gpu::block::GpuBlocks;
    use fwsvm::backend::sampled::{BlockEngine, BlockJob, CpuBlocks, Weights};
    use fwsvm::rng::SplitMix64;
    let Some(ctx) = context() else { return };
    let kernels = [
        Kernel::Rbf { gamma: 0.6 },
        Kernel::Poly {
            gamma: 0.4,
            coef0: 1.0,
            degree: 3,
        },
        Kernel::Linear,
        Kernel::Sigmoid {
            gamma: 0.3,
            coef0: 0.5,
        },
    ];
    for sparse in [false, true] {
        let ds = random_dataset(400, 7, sparse, 41);
        for kernel in kernels {
            let prob = Problem::new(&ds, ds.labels.clone(), kernel, 3.0)
                .unwrap()
                .with_class_weights(0.25, 2.0)
                .unwrap();
            for wide in [true, false] {
                // 7 features pad to 8 floats: 32 bytes a row, 96 slots at most.
                let cfg = GpuConfig {
                    precision: if wide { Precision::F64 } else { Precision::F32 },
                    max_chunk_bytes: Some(96 * 32),
                    ..Default::default()
                };
                let mut g = GpuBlocks::new(&prob, ctx, cfg).expect("block engine");
                let mut c = CpuBlocks::new(&prob);
                let mut r = SplitMix64::new(7);
                for round in 0..6 {
                    let mut alpha = ActiveSet::new(prob.len());
                    for _ in 0..40 {
                        alpha.set(r.below(prob.len()), 0.01 + r.next_f64());
                    }
                    let rows: Vec<usize> = (0..30).map(|_| r.below(prob.len())).collect();
                    // Rows of the α too, so the diagonal term 1/C is exercised.
                    let mut rows2: Vec<usize> = alpha.indices()[..10].to_vec();
                    rows2.push(rows[0]);
                    let cols = [(rows[1], 0.3), (alpha.indices()[0], -0.2)];
                    let run = |e: &mut dyn BlockEngine| {
                        let (mut a, mut b) = (vec![0.0; rows.len()], vec![0.0; rows2.len()]);
                        e.run(&mut [
                            BlockJob {
                                rows: &rows,
                                weights: Weights::Alpha(&alpha),
                                out: &mut a,
                            },
                            BlockJob {
                                rows: &rows2,
                                weights: Weights::Cols(&cols),
                                out: &mut b,
                            },
                        ])
                        .unwrap();
                        (a, b)
                    };
                    let (ga, gb) = run(&mut g);
                    let (ca, cb) = run(&mut c);
                    let scale = ca.iter().chain(&cb).fold(1e-3f64, |s, v| s.max(v.abs()));
                    let tol = if wide { 1e-10 } else { 1e-5 } * scale;
                    for (k, (x, y)) in ga.iter().chain(&gb).zip(ca.iter().chain(&cb)).enumerate() {
                        assert!(
                            (x - y).abs() <= tol,
                            "sparse {sparse}, {kernel:?}, f64 {wide}, round {round}, entry {k}: gpu {x} vs cpu {y}"
                        );
                    }
                }
                assert!(g.capacity() <= 96, "slots {}", g.capacity());
                assert!(g.capacity() > 64, "the slot buffer never grew");
                // 6 rounds × ≤ 81 distinct rows in 96 slots: rows were evicted and re-sent.
                assert!(g.uploaded_rows() > 96, "uploaded {}", g.uploaded_rows());
                let all: Vec<usize> = (0..200).collect();
                let mut out = vec![0.0; all.len()];
                let alpha = {
                    let mut a = ActiveSet::new(prob.len());
                    a.set(0, 1.0);
                    a
                };
                // More rows than the binding holds: this call runs on the CPU (exactly its
                // result), and the engine goes on with the device afterwards.
                g.run(&mut [BlockJob {
                    rows: &all,
                    weights: Weights::Alpha(&alpha),
                    out: &mut out,
                }])
                .unwrap();
                assert_eq!(g.cpu_calls(), 1);
                let mut want = vec![0.0; all.len()];
                c.run(&mut [BlockJob {
                    rows: &all,
                    weights: Weights::Alpha(&alpha),
                    out: &mut want,
                }])
                .unwrap();
                assert_eq!(out, want);
                let few: Vec<usize> = (0..20).collect();
                let (mut ga, mut ca) = (vec![0.0; 20], vec![0.0; 20]);
                for (e, o) in [(&mut g as &mut dyn BlockEngine, &mut ga), (&mut c, &mut ca)] {
                    e.run(&mut [BlockJob {
                        rows: &few,
                        weights: Weights::Alpha(&alpha),
                        out: o,
                    }])
                    .unwrap();
                }
                let tol = if wide { 1e-10 } else { 1e-5 }
                    * ca.iter().fold(1e-3f64, |s, v| s.max(v.abs()));
                assert!(ga.iter().zip(&ca).all(|(x, y)| (x - y).abs() <= tol));
                assert_eq!(g.cpu_calls(), 1, "a small block went to the CPU");
            }
        }
    }
}

/// Sampled iterations with the blocks on the device take the CPU's steps: the same draws (the
/// seed), the same first 50 vertex choices with the f64 blocks, and the same certified
/// optimum at the end (every FW variant and the CVM, f64 and f32 blocks).
fn sampled_iterations_match_the_cpu() {
    use fwsvm::backend::gpu::block::GpuBlocks;
    use fwsvm::backend::sampled::{Sampled, SampledConfig};
    let Some(ctx) = context() else { return };
    let ds = random_dataset(500, 5, true, 53);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.9 }, 4.0).unwrap();
    let cfg = SampledConfig {
        sample: 40,
        seed: 11,
        eps: 1e-7,
        rel_eps: 1.0,
        extra_draws: 2,
        stop: fwsvm::solver::StopRule::Gap,
    };
    let reference = {
        let params = SolverParams {
            algorithm: Some(Algorithm::Swap2),
            eps: 1e-11,
            ..Default::default()
        };
        solve(&prob, cpu_exact(&prob).as_mut(), &params, &mut []).unwrap()
    };
    let f_star = reference.certified_f.unwrap();
    let mut algs = Algorithm::FW.to_vec();
    algs.push(Algorithm::Cvm);
    for alg in algs {
        let short = SolverParams {
            algorithm: Some(alg),
            eps: 1e-300,
            rel_eps: Some(f64::INFINITY),
            max_iter: 50,
            certify: false,
            ..Default::default()
        };
        let gpu_cfg = |wide: bool| GpuConfig {
            precision: if wide { Precision::F64 } else { Precision::F32 },
            ..Default::default()
        };
        if alg != Algorithm::Cvm {
            let mut c = Recorder::new(Box::new(Sampled::new(&prob, cfg)));
            solve_plain(&prob, &mut c, &short, &mut []).unwrap();
            let engine = GpuBlocks::new(&prob, ctx, gpu_cfg(true)).unwrap();
            let mut g = Recorder::new(Box::new(Sampled::with_engine(cfg, Box::new(engine))));
            solve_plain(&prob, &mut g, &short, &mut []).unwrap();
            assert!(c.log.len() >= 50, "{alg}: {} steps", c.log.len());
            assert_eq!(c.log, g.log, "{alg}: vertex choices (f64 blocks)");
        }
        let long = SolverParams {
            algorithm: Some(alg),
            eps: 1e-7,
            max_iter: 2_000,
            ..Default::default()
        };
        let rc = solve_plain(&prob, &mut Sampled::new(&prob, cfg), &long, &mut []).unwrap();
        for wide in [true, false] {
            let engine = GpuBlocks::new(&prob, ctx, gpu_cfg(wide)).unwrap();
            let mut be = Sampled::with_engine(cfg, Box::new(engine));
            assert!(be.name().starts_with("gpu: "), "{}", be.name());
            let rg = solve_plain(&prob, &mut be, &long, &mut []).unwrap();
            let (fc, fg) = (rc.certified_f.unwrap(), rg.certified_f.unwrap());
            eprintln!(
                "{alg} f64 {wide}: cpu {} it f {fc:.10e}, gpu {} it f {fg:.10e}, f* {f_star:.10e}",
                rc.iterations, rg.iterations
            );
            assert!(fg >= f_star * (1.0 - 1e-9), "{alg}: {fg} below f* {f_star}");
            if wide {
                // The same steps: the same objective.
                assert!((fg - fc).abs() <= 1e-8 * fc, "{alg}: gpu {fg} vs cpu {fc}");
            } else {
                // f32 blocks change the path, not how far it gets.
                let (ec, eg) = (fc / f_star - 1.0, fg / f_star - 1.0);
                assert!(
                    eg <= 2.0 * ec + 1e-6,
                    "{alg}: gpu {eg:e} above f*, cpu {ec:e}"
                );
            }
        }
    }
}

/// Data uploaded once and bound as a view (a fold's rows, a pair's rows, composed) give the
/// very runs a separate upload gives: the same iterations and objective bit for bit, dense and
/// CSR, split across chunks; one-versus-one training on a shared device writes the same model.
fn shared_data_views_match_separate_uploads() {
    use fwsvm::backend::gpu::GpuData;
    use fwsvm::train::{TrainParams, train};
    let Some(ctx) = context() else { return };
    let t = std::time::Instant::now();
    for sparse in [false, true] {
        let ds = random_dataset(240, 6, sparse, 61);
        let rows: Vec<usize> = (0..ds.len()).filter(|i| i % 3 != 1).collect();
        let sub = ds.subset(&rows);
        let prob = Problem::new(&sub, sub.labels.clone(), Kernel::Rbf { gamma: 0.7 }, 3.0).unwrap();
        let chunk = Some(2048u64);
        let data = Arc::new(GpuData::upload(&ds, ctx, chunk).unwrap());
        let cfg = GpuConfig {
            cache_bytes: 1 << 20,
            precision: Precision::F32,
            max_chunk_bytes: chunk,
            ..GpuConfig::default()
        };
        for alg in [Algorithm::Partan, Algorithm::Swap2] {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-4,
                ..Default::default()
            };
            let mut own = GpuBackend::new(&prob, ctx, cfg).unwrap();
            let a = solve(&prob, &mut own, &params, &mut []).unwrap();
            let mut view =
                GpuBackend::with_data(&prob, ctx, cfg, Some((&data, Some(&rows)))).unwrap();
            // The view uploads a row map, not the rows.
            assert!(view.memory_plan().data_bytes < own.memory_plan().data_bytes);
            let b = solve(&prob, &mut view, &params, &mut []).unwrap();
            assert_eq!(a.iterations, b.iterations, "sparse {sparse} {alg}");
            assert_eq!(a.f.to_bits(), b.f.to_bits(), "sparse {sparse} {alg}");
        }
        // A view whose rows are not ascending is refused.
        let bad: Vec<usize> = rows.iter().rev().copied().collect();
        assert!(GpuBackend::with_data(&prob, ctx, cfg, Some((&data, Some(&bad)))).is_err());
    }
    eprintln!("views: {:.1}s", t.elapsed().as_secs_f64());
    // One-versus-one on three classes: every pair binds its rows of the shared upload.
    let t = std::time::Instant::now();
    let mut ds = random_dataset(240, 4, false, 67);
    for (i, y) in ds.labels.iter_mut().enumerate() {
        *y = (i % 3) as f64;
    }
    let own = GpuContext::open(&DeviceSelector::Name(ctx.adapter.name.clone()))
        .unwrap()
        .unwrap();
    let device = Device::Gpu {
        ctx: Arc::new(own),
        cfg: GpuConfig::default(),
        fallback: false,
        shared: None,
    };
    let mut params = TrainParams {
        c: 1.0,
        device: device.clone(),
        ..TrainParams::default()
    };
    // PARTAN to its papers' rule: the CPU's and the GPU's folds agree within a point there.
    params.solver.algorithm = Some(Algorithm::Partan);
    params.solver.eps = 1e-3;
    let (m1, _) = train(&ds, &params, &mut |_| Vec::new()).unwrap();
    let shared = TrainParams {
        device: device.share(&ds).unwrap(),
        ..params.clone()
    };
    assert!(shared.device.is_shared());
    let (m2, _) = train(&ds, &shared, &mut |_| Vec::new()).unwrap();
    assert_eq!(m1.sv_coef, m2.sv_coef);
    assert_eq!(m1.rho, m2.rho);
    // Cross-validation on the GPU (data shared) against the CPU's.
    let cpu = TrainParams {
        device: Device::Cpu,
        ..params.clone()
    };
    let g = fwsvm::train::cross_validate(&ds, &shared, 4, 5, &mut |_, _| Vec::new()).unwrap();
    let c = fwsvm::train::cross_validate(&ds, &cpu, 4, 5, &mut |_, _| Vec::new()).unwrap();
    eprintln!(
        "one-versus-one and cross-validation: {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert!(
        (g.accuracy() - c.accuracy()).abs() <= 1.0,
        "gpu {} vs cpu {}",
        g.accuracy(),
        c.accuracy()
    );
}

/// Working-set shrinking on the GPU: the rounds bind views of one shared upload (no data
/// re-uploaded per round), the working set forced small (40 of 150 points, ρ = 0, so the
/// exact finish has to bring points back), and PARTAN and SWAP-2o reach the CPU's optimum
/// within the certified gaps; the device traffic is counted. (Small: every round builds a
/// backend, which takes seconds on a software adapter.)
fn shrinking_on_the_gpu_matches_the_cpu() {
    use fwsvm::solver::entry::solve_rounds;
    use fwsvm::solver::shrink::ShrinkParams;
    let Some(ctx) = context() else { return };
    let tiny = ShrinkParams {
        margin: 0.0,
        min_size: 40,
        min_points: 0,
    };
    let own = GpuContext::open(&DeviceSelector::Name(ctx.adapter.name.clone()))
        .unwrap()
        .unwrap();
    let device = Device::Gpu {
        ctx: Arc::new(own),
        cfg: GpuConfig {
            precision: if ctx.f64 {
                Precision::F64
            } else {
                Precision::F32
            },
            ..GpuConfig::default()
        },
        fallback: false,
        shared: None,
    };
    let cpu = CpuConfig {
        cache_bytes: 1 << 20,
        precision: Some(Precision::F64),
        batched: false,
    };
    let ds = random_dataset(150, 5, false, 71);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 10.0).unwrap();
    let shared = device.share(&ds).unwrap();
    for alg in [Algorithm::Partan, Algorithm::Swap2] {
        let params = SolverParams {
            algorithm: Some(alg),
            eps: 1e-5,
            seed: 3,
            ..Default::default()
        };
        let c = solve_rounds(&prob, &Device::Cpu, cpu, &params, &tiny, &mut []).unwrap();
        let g = solve_rounds(&prob, &shared, cpu, &params, &tiny, &mut []).unwrap();
        for r in [&c, &g] {
            assert_eq!(r.stop, StopReason::Converged, "{alg}");
            assert!(r.certified_gap.unwrap() <= params.eps, "{alg}");
        }
        let (fc, fg) = (c.certified_f.unwrap(), g.certified_f.unwrap());
        assert!(
            (fc - fg).abs() <= c.certified_gap.unwrap().max(g.certified_gap.unwrap()),
            "{alg}: f {fc} (cpu) vs {fg} (gpu)"
        );
        let w = g.shrink.unwrap();
        assert!(w.rounds >= 1 && w.first_size < prob.len(), "{alg}: {w:?}");
        assert!(g.stats.has_device_traffic() && !c.stats.has_device_traffic());
        assert!(g.stats.round_trips >= g.iterations, "{alg}: {:?}", g.stats);
    }
}

/// The batched column passes write the same entries as one column at a time, bit for bit:
/// the tiled pass (sixteen columns per read of the data, copied into their slots) where the
/// binding holds the tile, the pass into four slots where data are split into many chunks;
/// dense and CSR, every kernel, both gradient types, a full batch and a partial one, a
/// repeated and a cached index.
fn batched_columns_equal_single_columns_on_the_gpu() {
    let Some(ctx) = context() else { return };
    for (sparse, kernel) in [
        (false, Kernel::Rbf { gamma: 0.7 }),
        (true, Kernel::Rbf { gamma: 0.3 }),
        (
            false,
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
        ),
        (true, Kernel::Linear),
        (
            false,
            Kernel::Sigmoid {
                gamma: 0.2,
                coef0: -0.3,
            },
        ),
    ] {
        let ds = random_dataset(3000, 13, sparse, 8);
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, 2.0).unwrap();
        for (wide, chunk) in [false, true]
            .into_iter()
            .flat_map(|w| [(w, Some(1024)), (w, None)])
        {
            let tag = format!("{kernel:?} sparse {sparse} f64 {wide} chunk {chunk:?}");
            let mut batched = gpu(&prob, ctx, wide, chunk);
            let mut single = gpu(&prob, ctx, wide, Some(1024));
            let chunks = batched.memory_plan().chunks as u64;
            let all: Vec<usize> = (0..prob.len()).collect();
            // Column 5 cached first: the list holds it, a repeat, and six new columns.
            let mut e = vec![0.0; 1];
            batched.column_entries(5, &[0], &mut e).unwrap();
            let js = [3usize, 5, 2999, 3, 1024, 1500, 17, 2047];
            let before = batched.stats().dispatches;
            let done = batched.prefetch_columns(&js).unwrap();
            assert_eq!(done, 6, "{tag}: columns computed by the batched pass");
            // One tiled pass over the data, or two of four columns, per chunk.
            let passes = if chunk.is_none() { 1 } else { 2 };
            assert_eq!(
                batched.stats().dispatches - before,
                passes * chunks,
                "{tag}: dispatches of the batch"
            );
            let st = batched.stats();
            assert_eq!(st.prefetched, 6, "{tag}");
            let (mut a, mut b) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
            for &j in &js {
                batched.column_entries(j, &all, &mut a).unwrap();
                single.column_entries(j, &all, &mut b).unwrap();
                for i in 0..prob.len() {
                    assert_eq!(a[i].to_bits(), b[i].to_bits(), "{tag}: Q[{i}, {j}]");
                }
                let tol = if wide { 1e-12 } else { 1e-5 };
                for i in (0..prob.len()).step_by(97).chain([j]) {
                    assert!(
                        (a[i] - prob.q(i, j)).abs() < tol,
                        "{tag}: Q[{i}, {j}] vs host"
                    );
                }
            }
            // Every column was read from the cache after the batch: no more were computed.
            assert_eq!(batched.stats().columns_computed, 7, "{tag}");
        }
    }
}

/// The library's device API (what the CLI's --backend/--device and the Python package's
/// `backend`/`device` use): `--backend gpu` opens an adapter and trains the CPU's labels; a
/// named adapter that does not exist is an error naming it; sample weights train there.
fn device_requests_open_the_gpu_and_sample_weights_train_there() {
    use fwsvm::backend::{BackendChoice, DeviceRequest};
    use fwsvm::train::{Gamma, TrainParams, train};
    if context().is_none() {
        return;
    }
    let mut notes = Vec::new();
    let req = DeviceRequest {
        backend: BackendChoice::Gpu,
        ..Default::default()
    };
    let dev = req.open(&mut |s| notes.push(s.to_string())).unwrap();
    assert!(dev.is_gpu() && !dev.falls_back(), "{}", dev.describe());
    assert!(dev.describe().starts_with("gpu: "), "{}", dev.describe());
    let ds = random_dataset(300, 5, false, 9);
    let base = TrainParams {
        gamma: Gamma::Value(0.5),
        shrink: None,
        ..Default::default()
    };
    let on_gpu = TrainParams {
        device: dev.clone(),
        ..base.clone()
    };
    let (gm, _) = train(&ds, &on_gpu, &mut |_| Vec::new()).unwrap();
    let (cm, _) = train(&ds, &base, &mut |_| Vec::new()).unwrap();
    let same = gm
        .predict(&ds)
        .iter()
        .zip(cm.predict(&ds))
        .filter(|(a, b)| **a == *b)
        .count();
    assert!(
        same >= 297,
        "GPU and CPU labels agree on {same} of 300 rows"
    );

    let missing = DeviceRequest {
        backend: BackendChoice::Gpu,
        device: Some("no-such-adapter-xyz".into()),
        ..Default::default()
    };
    let e = missing.open(&mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("no-such-adapter-xyz"), "{e}");

    // Sample weights train on the GPU (each row's signed cost y_i·s_i in the label buffer):
    // the weighted problem's optimum, as the CPU finds it, within both runs' duality gaps.
    let w: std::sync::Arc<[f64]> = (0..300).map(|i| 1.0 + 3.0 * (i % 2) as f64).collect();
    let weighted = TrainParams {
        sample_weights: Some(w.clone()),
        ..on_gpu.clone()
    };
    let (wg, rg) = train(&ds, &weighted, &mut |_| Vec::new()).unwrap();
    let (wc, rc) = train(
        &ds,
        &TrainParams {
            sample_weights: Some(w),
            ..base
        },
        &mut |_| Vec::new(),
    )
    .unwrap();
    // The certified (exact f64) objective and gap where the run has them.
    let fg = |r: &fwsvm::solver::SolveResult| {
        (
            r.certified_f.unwrap_or(r.f),
            r.certified_gap.unwrap_or(r.gap),
        )
    };
    let ((fgpu, ggpu), (fcpu, gcpu)) = (fg(&rg[0].result), fg(&rc[0].result));
    assert!(
        (fgpu - fcpu).abs() <= ggpu + gcpu,
        "weighted objective: GPU {fgpu} (gap {ggpu}), CPU {fcpu} (gap {gcpu})"
    );
    assert!(
        (fgpu - rc_unweighted(&ds, &on_gpu)).abs() > ggpu,
        "the weights change the problem"
    );
    let same = wg
        .predict(&ds)
        .iter()
        .zip(wc.predict(&ds))
        .filter(|(a, b)| **a == *b)
        .count();
    assert!(same >= 297, "weighted labels agree on {same} of 300 rows");
    // A weight f32 cannot hold is refused (the smallest cost, before the device), not trained
    // as a label of 0.
    let tiny: std::sync::Arc<[f64]> = (0..300).map(|i| if i == 7 { 1e-50 } else { 1.0 }).collect();
    let e = train(
        &ds,
        &TrainParams {
            sample_weights: Some(tiny),
            ..on_gpu.clone()
        },
        &mut |_| Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("1e-50") && e.contains("f32"), "{e}");
}

/// The objective of `params`' run on `ds` without weights.
fn rc_unweighted(ds: &fwsvm::data::Dataset, params: &fwsvm::train::TrainParams) -> f64 {
    let (_, r) = fwsvm::train::train(ds, params, &mut |_| Vec::new()).unwrap();
    r[0].result.f
}

/// A GPU per rank: each rank's GPU backend computes the columns of other ranks' vertices as
/// guests (`Guests::add_guest`). The gradient entries are the device's, row by row as in one
/// process; αᵀg is summed on the host from the gathered entries rather than on the device, so
/// the runs agree to rounding, not to the bit: the same iterates to 1e-4 over the first 100
/// iterations and the same optimum within the certified gaps, in f32 and f64, on 2 and 3 ranks
/// (an empty slice included).
fn a_gpu_per_rank_reaches_the_single_process_gpu_optimum() {
    use fwsvm::dist::backend::DistBackend;
    use fwsvm::dist::comm::{Comm, on_threads};
    use fwsvm::dist::slice::RowSlice;
    let Some(ctx) = context() else { return };
    for (sparse, wide) in [(false, false), (true, true)] {
        if wide && !ctx.f64 {
            continue;
        }
        let ds = random_dataset(300, 5, sparse, 83);
        let kernel = Kernel::Rbf { gamma: 0.8 };
        let full = Problem::new(&ds, ds.labels.clone(), kernel, 4.0).unwrap();
        for alg in [Algorithm::Partan, Algorithm::Swap, Algorithm::Cvm] {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-4,
                max_iter: 3000,
                ..Default::default()
            };
            let trace = |prob: &Problem<'_>, be: &mut dyn Marks| {
                let mut seen = Vec::new();
                let mut obs = |p: &fwsvm::solver::Progress| seen.push((p.iter, p.f, p.gap));
                let r = solve(prob, be, &params, &mut [&mut obs]).unwrap();
                (seen, r)
            };
            let (one, r1) = trace(&full, &mut gpu(&full, ctx, wide, None));
            for sizes in [&[150usize, 150][..], &[100, 0, 200][..]] {
                let runs = on_threads(sizes.len(), |comm| {
                    let first: usize = sizes[..comm.rank()].iter().sum();
                    let rows: Vec<usize> = (first..first + sizes[comm.rank()]).collect();
                    let local = ds.subset(&rows);
                    let prob = Problem::new(&local, local.labels.clone(), kernel, 4.0).unwrap();
                    let slice = RowSlice {
                        first,
                        rows: rows.len(),
                        total: ds.len(),
                    };
                    let be = Box::new(gpu(&prob, ctx, wide, None));
                    let mut dist = DistBackend::new(comm, &prob, be, slice).unwrap();
                    trace(&prob, &mut dist)
                });
                for (r, (many, rp)) in runs.iter().enumerate() {
                    let tag = format!("{alg}, sparse {sparse}, f64 {wide}, rank {r} of {sizes:?}");
                    for (a, b) in one.iter().zip(many).take(100) {
                        assert_eq!(a.0, b.0, "{tag}");
                        assert!(
                            (a.1 - b.1).abs() <= 1e-4 * a.1.abs(),
                            "{tag}: f {a:?} {b:?}"
                        );
                    }
                    let (g1, gp) = (r1.certified_gap.unwrap(), rp.certified_gap.unwrap());
                    let (f1, fp) = (r1.certified_f.unwrap(), rp.certified_f.unwrap());
                    assert!(
                        (f1 - fp).abs() <= g1.max(gp),
                        "{tag}: f {f1} vs {fp}, gaps {g1} {gp}"
                    );
                    assert!(gp <= 2.0 * params.eps, "{tag}: certified gap {gp}");
                }
            }
        }
    }
}

/// The working-set solver (`-a ws`, q = 8) on the GPU (its own `lowest` and `block`: one
/// readback of g, one of g_W and Q_WW): with the f64 gradient its first two outer iterations
/// open on the CPU's vertices (s, v) but at an exact tie (later ones may part: each inner
/// solve takes hundreds of decisions between near-equal pairwise decreases on Q entries that
/// the two backends round differently in the last bit — seen at the fifth on linear sparse,
/// whose Q has rank 9, and the ninth on rbf dense), both backends reach the same optimum
/// within their certified gaps, and the GPU makes at most three round trips per outer
/// iteration (the reduction, g for the candidates, the block), plus the run's fixed few.
fn working_set_solver_matches_the_cpu() {
    let Some(ctx) = context() else { return };
    for (name, ds, kernel, c, _) in problems() {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let params = SolverParams {
            algorithm: Some(Algorithm::Ws),
            ws_size: 8,
            eps: 1e-9,
            rel_eps: Some(f64::INFINITY),
            max_iter: 100_000,
            seed: 5,
            init_size: 4,
            ..Default::default()
        };
        let mut cpu = Recorder::new(cpu_exact(&prob));
        let rc = solve_plain(&prob, &mut cpu, &params, &mut []).unwrap();
        let mut g = Recorder::new(Box::new(gpu(&prob, ctx, true, None)));
        let rg = solve_plain(&prob, &mut g, &params, &mut []).unwrap();
        for (k, (a, b)) in cpu.reds.iter().zip(&g.reds).take(2).enumerate() {
            if (a.s, a.v) != (b.s, b.v) {
                let tie = (a.g_s - b.g_s).abs() <= 1e-13 * a.g_s.abs().max(1e-300)
                    && (a.g_v - b.g_v).abs() <= 1e-13 * a.g_v.abs().max(1e-300);
                assert!(tie, "{name}: outer iteration {k}: {a:?} vs {b:?}");
                break;
            }
        }
        let (fc, gc) = (rc.certified_f.unwrap(), rc.certified_gap.unwrap());
        let (fg, gg) = (rg.certified_f.unwrap(), rg.certified_gap.unwrap());
        assert!(gc <= 1e-9 && gg <= 1e-9, "{name}: gaps {gc}, {gg}");
        assert!((fc - fg).abs() <= gc + gg, "{name}: f {fc} vs {fg}");
        let trips = rg.stats.round_trips;
        assert!(
            rg.iterations > 5 && trips <= 3 * rg.iterations + 8,
            "{name}: {trips} round trips in {} outer iterations",
            rg.iterations
        );
    }
}

/// The working set's block (g_W and Q[W, W]) gathered in one dispatch over the whole cache
/// equals the block read column by column, bit for bit, in both precisions, with columns
/// computed and cached before and in the call; and it takes fewer dispatches.
fn one_dispatch_blocks_equal_blocks_by_columns() {
    let Some(ctx) = context() else { return };
    let ds = random_dataset(700, 6, false, 29);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.4 }, 2.0).unwrap();
    let mut alpha = ActiveSet::new(prob.len());
    alpha.set(3, 0.25);
    alpha.set(640, 0.75);
    for wide in [false, true] {
        let mut be = gpu(&prob, ctx, wide, None);
        be.set_alpha(&alpha).unwrap();
        // 3 and 640 are cached by set_alpha's columns; the rest are computed by the block.
        let w: Vec<usize> = [640, 3, 17, 699, 0, 350, 351, 88].to_vec();
        let n = w.len();
        let (mut q1, mut g1) = (vec![f64::NAN; n * n], vec![f64::NAN; n]);
        let d0 = be.stats().dispatches;
        be.block(&w, &mut q1, &mut g1).unwrap();
        let d1 = be.stats().dispatches;
        let (mut q2, mut g2) = (vec![f64::NAN; n * n], vec![f64::NAN; n]);
        fwsvm::backend::block_by_columns(&mut be, &w, &mut q2, &mut g2).unwrap();
        let d2 = be.stats().dispatches;
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&g1), bits(&g2), "wide {wide}: g_W");
        assert_eq!(bits(&q1), bits(&q2), "wide {wide}: Q[W, W]");
        assert!(q1.iter().all(|x| x.is_finite()), "wide {wide}");
        // The block's dispatches: its columns' batches and one gather; by columns, one each.
        assert!(
            d1 - d0 < d2 - d1,
            "wide {wide}: {} vs {} dispatches",
            d1 - d0,
            d2 - d1
        );
        for k in 0..n {
            let exact = prob.q(w[k], w[k]);
            assert!(
                (q1[k * n + k] - exact).abs() <= 1e-5 * exact.abs(),
                "wide {wide}: {k}"
            );
        }
    }
}

/// The working set's candidates compacted on the device (shaders/below.wgsl, f32 gradient)
/// are the ones read from g whole: the same run, iterate for iterate, with less read back.
/// Either way they come back with the reduction (src/backend/gpu/prefetch.rs): an outer
/// iteration waits for two round trips (the reduction and the block), a quarter more for the
/// working set's shrink checks, and one more when the compaction's bound let through fewer
/// than k rows (g is then read whole).
fn compacted_candidates_give_the_run_of_the_whole_gradient() {
    let Some(ctx) = context() else { return };
    // The shared problems, and one of 6,000 points where the compaction reads back less.
    let big = random_dataset(6000, 5, false, 11);
    let mut cases: Vec<(String, fwsvm::data::Dataset, Kernel, f64, bool)> = problems()
        .into_iter()
        .map(|(name, ds, kernel, c, _)| (name, ds, kernel, c, false))
        .collect();
    cases.push((
        "6000 points".into(),
        big,
        Kernel::Rbf { gamma: 0.5 },
        10.0,
        true,
    ));
    for (name, ds, kernel, c, large) in cases {
        let prob = Problem::new(&ds, ds.labels.clone(), kernel, c).unwrap();
        let params = SolverParams {
            algorithm: Some(Algorithm::Ws),
            ws_size: 8,
            eps: 1e-6,
            rel_eps: Some(f64::INFINITY),
            // The large case's first 300 outer iterations are enough to compare.
            max_iter: if large { 300 } else { 100_000 },
            seed: 5,
            init_size: 4,
            ..Default::default()
        };
        let run = |min_rows: usize| {
            let cfg = GpuConfig {
                cache_bytes: 1 << 20,
                precision: Precision::F32,
                max_chunk_bytes: None,
                compact_min_rows: min_rows,
                loop_place: LoopPlace::Host,
            };
            let mut be = Recorder::new(Box::new(GpuBackend::new(&prob, ctx, cfg).unwrap()));
            let r = solve_plain(&prob, &mut be, &params, &mut []).unwrap();
            (r, be.reds)
        };
        let (whole, wr) = run(usize::MAX);
        let (compact, cr) = run(0);
        assert_eq!(whole.iterations, compact.iterations, "{name}");
        assert_eq!(wr.len(), cr.len(), "{name}");
        for (k, (a, b)) in wr.iter().zip(&cr).enumerate() {
            assert_eq!(
                (a.s, a.v, a.g_s, a.g_v),
                (b.s, b.v, b.g_s, b.g_v),
                "{name}: {k}"
            );
        }
        assert_eq!(whole.certified_f, compact.certified_f, "{name}");
        for (how, r, per) in [("whole", &whole, 2.25), ("compact", &compact, 3.25)] {
            assert!(
                r.stats.round_trips <= (per * r.iterations as f64) as u64 + 20,
                "{name}, {how}: {} round trips in {} iterations",
                r.stats.round_trips,
                r.iterations
            );
        }
        if large {
            assert!(
                compact.stats.bytes_down < whole.stats.bytes_down,
                "{name}: {} bytes down compacted, {} whole",
                compact.stats.bytes_down,
                whole.stats.bytes_down
            );
        }
    }
}

/// The GPU's update by four columns a pass (up to four columns) and by a list of every column
/// in one pass (more than four, the cache bound whole: shaders/update_list.wgsl) give the
/// numbers of updates by pairs, bit for bit (both gradient types, seven columns with a repeat
/// and a scale), and the same argmin.
fn four_column_and_list_updates_equal_updates_by_pairs() {
    let Some(ctx) = context() else { return };
    let ds = random_dataset(3000, 7, false, 43);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.3 }, 3.0).unwrap();
    let mut alpha = ActiveSet::new(prob.len());
    alpha.set(5, 0.5);
    alpha.set(1200, 0.5);
    let cols: Vec<(usize, f64)> = [3, 5, 77, 1200, 77, 2100, 2999]
        .iter()
        .enumerate()
        .map(|(k, &j)| {
            (
                j,
                0.01 * (k as f64 + 1.0) * if k % 2 == 0 { 1.0 } else { -1.0 },
            )
        })
        .collect();
    for wide in [false, true] {
        for n in [4, 7] {
            let cols = &cols[..n];
            let (mut a, mut b) = (gpu(&prob, ctx, wide, None), gpu(&prob, ctx, wide, None));
            a.set_alpha(&alpha).unwrap();
            b.set_alpha(&alpha).unwrap();
            let before = a.stats().dispatches;
            a.update_many(0.75, cols).unwrap();
            let passes = a.stats().updates;
            fwsvm::backend::update_by_pairs(&mut b, 0.75, cols).unwrap();
            assert_eq!(passes, 1, "f64 {wide}: {n} columns in one pass");
            assert!(
                a.stats().dispatches > before,
                "f64 {wide}: nothing recorded"
            );
            let all: Vec<usize> = (0..prob.len()).collect();
            let (mut ga, mut gb) = (vec![0.0; prob.len()], vec![0.0; prob.len()]);
            a.gather(&all, &mut ga).unwrap();
            b.gather(&all, &mut gb).unwrap();
            for i in 0..prob.len() {
                assert_eq!(ga[i].to_bits(), gb[i].to_bits(), "f64 {wide}, {n}: row {i}");
            }
            assert_eq!(
                a.reduce(&alpha).unwrap(),
                b.reduce(&alpha).unwrap(),
                "f64 {wide}, {n}"
            );
        }
    }
}

/// `ds` with `d` features (the extra ones zero), stored dense or CSR.
fn widened(ds: &fwsvm::data::Dataset, d: usize, dense: bool) -> fwsvm::data::Dataset {
    use fwsvm::data::Row;
    let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
    for i in 0..ds.len() {
        match ds.row(i) {
            Row::Dense(v) => {
                for (f, &x) in v.iter().enumerate() {
                    ix.push(f as u32);
                    vs.push(x);
                }
            }
            Row::Sparse(fi, fv) => {
                ix.extend_from_slice(fi);
                vs.extend_from_slice(fv);
            }
        }
        ip.push(ix.len());
    }
    fwsvm::data::Dataset::from_csr_as(d, ip, ix, vs, ds.labels.clone(), dense)
}

/// On the f64 gradient the device's outer iterations are the host's replay of its rule
/// (`solver::device_replay`): the same |W| and inner steps each iteration and α within 1e-10,
/// dense and CSR chunks, query rows in workgroup memory (d = 6) and read from the device
/// buffer (d = 460), over fifteen iterations (q = 16 on 300 points: W is kept, refilled and
/// cut by the away list; the two may part only at a near-tie that rounding breaks either way,
/// and not within the first five), and four at q = 512 over 3,000 points. Three batches of
/// five iterations end where fifteen batches of one do, to the bit, in a fifth of the round
/// trips, and read back only their status and W's α.
fn the_device_loop_replays_its_rule_on_the_host() {
    use fwsvm::solver::device_replay::replay;
    let Some(ctx) = context() else { return };
    if !ctx.f64 {
        eprintln!("the device loop's f64 replay: the adapter has no SHADER_F64, skipped");
        return;
    }
    // d = 460: the same points with 454 more features, all zero — rows too wide for the
    // workgroup's tile, so the columns read them from the device buffer. Dense and CSR chunks.
    for (sparse, d, dense) in [
        (false, 6, true),
        (true, 6, false),
        (false, 460, false),
        (false, 460, true),
    ] {
        let ds = widened(&random_dataset(300, 6, sparse, 21), d, dense);
        assert_eq!(ds.is_dense(), dense);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.4 }, 2.0).unwrap();
        let mut a0 = ActiveSet::new(prob.len());
        for (k, i) in [3usize, 50, 120, 201, 299].into_iter().enumerate() {
            a0.set(i, (k + 1) as f64 / 15.0);
        }
        let run = |batches: usize, batch: usize| {
            let cfg = GpuConfig {
                cache_bytes: 1 << 20,
                precision: Precision::F64,
                loop_place: LoopPlace::Device,
                ..GpuConfig::default()
            };
            let mut be = GpuBackend::new(&prob, ctx, cfg).unwrap();
            let r = replay(
                &prob,
                &mut be,
                &a0,
                16,
                (1e-300, 1e-12),
                batches,
                batch,
                1e-10,
            )
            .unwrap();
            (r, be.stats())
        };
        // The runs may part only where the two sides stood at a near-tie that f64 rounding
        // breaks either way (the device's exponential and dots round as the CPU's but for
        // rare cases), and not within the first five iterations.
        let parts_at_a_tie = |r: &fwsvm::solver::device_replay::Replay, min: usize| {
            r.first_difference.is_none() || (r.parted_at_tie && r.matching >= min)
        };
        let (ones, st1) = run(15, 1);
        assert!(
            parts_at_a_tie(&ones, 5),
            "sparse {sparse}, d = {d}, at a tie {}, {} of {} the same: {:?}",
            ones.parted_at_tie,
            ones.matching,
            ones.batches,
            ones.first_difference
        );
        assert_eq!(ones.iterations, 15, "sparse {sparse}");
        if ones.first_difference.is_some() {
            eprintln!(
                "replay, q = 16, sparse {sparse}, d = {d}: parted at a near-tie after {} of 15 iterations",
                ones.matching
            );
        }
        let (fives, st5) = run(3, 5);
        // A larger W (two entries per invocation in the inner solve) over more rows (several
        // tiles per workgroup in the compaction).
        if d > 6 {
            continue;
        }
        let ds_l = widened(&random_dataset(3000, 6, sparse, 5), 6, dense);
        let prob_l =
            Problem::new(&ds_l, ds_l.labels.clone(), Kernel::Rbf { gamma: 0.4 }, 2.0).unwrap();
        let mut a_l = ActiveSet::new(prob_l.len());
        for i in [7usize, 900, 1800, 2999] {
            a_l.set(i, 0.25);
        }
        let cfg = GpuConfig {
            cache_bytes: 64 << 20,
            precision: Precision::F64,
            loop_place: LoopPlace::Device,
            ..GpuConfig::default()
        };
        let mut be = GpuBackend::new(&prob_l, ctx, cfg).unwrap();
        let large = replay(&prob_l, &mut be, &a_l, 512, (1e-300, 1e-12), 4, 1, 1e-10).unwrap();
        assert!(
            large.first_difference.is_none() || (large.parted_at_tie && large.matching >= 1),
            "sparse {sparse}, q = 512: {:?}",
            large.first_difference
        );
        eprintln!(
            "replay, q = 512 over 3,000 rows, sparse {sparse}: {} of {} batches the same",
            large.matching, large.batches
        );
        assert!(
            parts_at_a_tie(&fives, 1),
            "sparse {sparse}: {:?}",
            fives.first_difference
        );
        let bits = |a: &ActiveSet| {
            (0..prob.len())
                .map(|i| a.get(i).to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            bits(&ones.alpha),
            bits(&fives.alpha),
            "sparse {sparse}: batches of 5 against batches of 1"
        );
        // One round trip a batch (and one to set the gradient up) …
        assert_eq!(st5.round_trips + 12, st1.round_trips, "{st1:?}\n{st5:?}");
        // … reading back the status records, W's points and α of each iteration and four
        // counters: never the 16 × 16 block or an m-vector.
        let per_batch = st5.bytes_down as f64 / 3.0;
        assert!(
            per_batch < (8 * 64 * 4 + 4 * 64 * 8 + 5 * 16 * 12 + 64) as f64,
            "{per_batch} B a batch"
        );
    }
}

/// ws with its outer iterations on the device reaches the CPU's optimum within the certified
/// gaps, f32 and f64 gradients, dense and CSR data, and waits once per batch.
fn the_device_loop_reaches_the_cpu_optimum() {
    let Some(ctx) = context() else { return };
    for sparse in [false, true] {
        let ds = random_dataset(400, 5, sparse, 33);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 4.0).unwrap();
        let params = SolverParams {
            algorithm: Some(Algorithm::Ws),
            eps: 1e-7,
            rel_eps: Some(1e-4),
            ws_size: 32,
            ..Default::default()
        };
        let mut cpu = cpu_exact(&prob);
        let c = solve(&prob, cpu.as_mut(), &params, &mut []).unwrap();
        let (fc, gc) = (c.certified_f.unwrap(), c.certified_gap.unwrap());
        for wide in [true, false] {
            if wide && !ctx.f64 {
                continue;
            }
            let cfg = GpuConfig {
                cache_bytes: 1 << 20,
                precision: if wide { Precision::F64 } else { Precision::F32 },
                loop_place: LoopPlace::Device,
                ..GpuConfig::default()
            };
            let mut be = GpuBackend::new(&prob, ctx, cfg).unwrap();
            let r = solve_plain(&prob, &mut be, &params, &mut []).unwrap();
            let (fg, gg) = (r.certified_f.unwrap(), r.certified_gap.unwrap());
            eprintln!(
                "device loop, sparse {sparse}, f64 {wide}: f {fg:.9e} (cpu {fc:.9e}), gap {gg:.2e} (cpu {gc:.2e}), {} iterations, {} round trips",
                r.iterations, r.stats.round_trips
            );
            assert!(
                (fg - fc).abs() <= gg + gc,
                "f {fg} vs {fc} beyond the gaps {gg} + {gc}"
            );
            if wide {
                assert_eq!(r.stop, StopReason::Converged);
            }
            // One wait per batch, and the first iteration's reduction.
            assert!(r.stats.round_trips <= r.iterations + 1, "{:?}", r.stats);
            assert!(r.stats.call_ns[fwsvm::backend::call::DEVICE_LOOP] > 0);
            // Under the MEB stop rule the host drives the loop: the device tests the gap's.
            let meb = SolverParams {
                stop: fwsvm::stop::StopRule::Meb,
                ..params.clone()
            };
            let mut be = GpuBackend::new(&prob, ctx, cfg).unwrap();
            let r = solve_plain(&prob, &mut be, &meb, &mut []).unwrap();
            assert_eq!(r.stats.call_ns[fwsvm::backend::call::DEVICE_LOOP], 0);
        }
    }
}
