//! The command line on a GPU: `fwsvm info` lists the adapters, `train --backend gpu` and
//! `--backend auto` train on one. They run wherever wgpu finds an adapter (lavapipe counts); on
//! a machine without one they are reported ignored, with the reason printed once; in CI
//! (`CI=true`, where `.ci/run` installs lavapipe) a missing adapter is a failure.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::write_train;
use fwsvm::backend::gpu::{DeviceSelector, GpuContext};
use predicates::prelude::*;

fn main() -> std::process::ExitCode {
    let adapter = GpuContext::open(&DeviceSelector::Any).expect("opening the adapter");
    let missing = adapter
        .is_none()
        .then(|| "GPU tests: no GPU adapter (install mesa-vulkan-drivers libvulkan1)".to_string());
    drop(adapter);
    common::run_tests(trials![info_and_gpu_backend], missing)
}

fn fwsvm() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("fwsvm").expect("fwsvm binary")
}

/// `fwsvm info` lists the adapters; `train --backend gpu` trains on one (the software adapter
/// in CI) and writes the same kind of model; a `--device` that does not exist is a usage error.
fn info_and_gpu_backend() {
    let out = fwsvm()
        .arg("info")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("] "), "fwsvm info lists no adapter:\n{out}");
    assert!(out.contains("max storage binding"), "{out}");
    let dir = common::tempdir();
    let train = write_train(dir.path());
    let model = dir.path().join("gpu.model");
    fwsvm()
        .args(["train", "--backend", "gpu", "-a", "swap", "--test"])
        .arg(&train)
        .arg(&train)
        .arg(&model)
        .assert()
        .success()
        .stderr(predicate::str::contains("gpu: "))
        .stderr(predicate::str::contains("device traffic per iteration: "))
        .stderr(predicate::str::contains(" round trips, "))
        .stdout(predicate::str::contains("Accuracy = "));
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(text.starts_with("svm_type c_svc"), "{text}");
    // Sampled iterations compute their kernel blocks on the device.
    fwsvm()
        .args(["train", "--backend", "gpu", "--sample", "30", "--test"])
        .arg(&train)
        .arg(&train)
        .arg(dir.path().join("sampled.model"))
        .assert()
        .success()
        .stderr(predicate::str::contains("kernel blocks on the gpu: "))
        .stdout(predicate::str::contains("Accuracy = "));
    fwsvm()
        .args(["train", "--backend", "gpu", "--device", "97"])
        .arg(&train)
        .arg(dir.path().join("no.model"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("device 97: no such adapter"));
    assert!(!dir.path().join("no.model").exists());

    // Prediction on the device writes the labels the CPU writes.
    let (gpu_out, cpu_out) = (dir.path().join("gpu.out"), dir.path().join("cpu.out"));
    for (backend, out) in [("gpu", &gpu_out), ("cpu", &cpu_out)] {
        fwsvm()
            .args(["predict", "--backend", backend])
            .arg(&train)
            .arg(&model)
            .arg(out)
            .assert()
            .success()
            .stdout(predicate::str::contains("Accuracy = "));
    }
    assert_eq!(
        std::fs::read_to_string(&gpu_out).unwrap(),
        std::fs::read_to_string(&cpu_out).unwrap()
    );

    // fwsvm bench kernels: one table per backend, a row per layout × d × m.
    let out = fwsvm()
        .args([
            "bench",
            "kernels",
            "--backend",
            "both",
            "--rows",
            "2000,3000",
            "--dims",
            "5",
            "--min-time",
            "0.05",
            "--cpu-peak",
            "20",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("cpu (") && out.contains("memory bandwidth 20.0 GB/s (given)"),
        "{out}"
    );
    assert!(out.contains("gpu: "), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| dense |") || l.starts_with("| csr |"))
        .collect();
    assert_eq!(rows.len(), 8, "{out}");
    // The first table is the CPU's, judged against the given 20 GB/s.
    for (k, r) in rows.into_iter().enumerate() {
        // layout, m, d, nnz/row, MB, column time, GB/s, % of peak, evals/s, batched column
        // (q), batched evals/s, batched GB/s, iteration time, round trip
        let cells: Vec<&str> = r.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 14, "{r}");
        let batched: f64 = cells[10].parse().unwrap();
        assert!(batched > 0.0 && cells[9].ends_with(')'), "{r}");
        assert!(cells[13].ends_with('s'), "{r}");
        let gbs: f64 = cells[6].parse().unwrap();
        let evals: f64 = cells[8].parse().unwrap();
        let pct: f64 = cells[7].trim_end_matches(" %").parse().unwrap();
        if k < 4 {
            // GB/s is printed to three decimals: ±0.0005 GB/s is ±0.0025 % of 20 GB/s.
            assert!(
                (pct - gbs / 20.0 * 100.0).abs() <= 0.01 * pct + 0.0025 + 1e-3,
                "{r}"
            );
        }
        assert!(pct > 0.0, "{r}");
        assert!(gbs > 0.0 && evals > 0.0, "{r}");
    }
    // The f32 tiles alone, for each block d of 32 or more (54, 256, 784), where they run.
    let tiles: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("f32 RBF tiles alone"))
        .filter(|l| l.starts_with("| ") && l.ends_with(" % |"))
        .collect();
    if out.contains("(avx512 on") {
        assert_eq!(tiles.len(), 3, "{out}");
        for r in tiles {
            let cells: Vec<&str> = r.trim_matches('|').split('|').map(str::trim).collect();
            let gflops: f64 = cells[1].parse().unwrap();
            assert!(gflops > 0.0, "{r}");
        }
    } else {
        eprintln!("no AVX-512 here: bench kernels prints no tiles table (checked absent)");
        assert!(tiles.is_empty(), "{out}");
    }
    fwsvm()
        .args(["bench", "kernels", "--backend", "cpu", "--density", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--density"));
    for (flag, says) in [
        ("--block-dims", "need at least 1 feature"),
        ("--block-q", "need at least 1 column"),
        ("--block-rows", "need at least 3 rows"),
    ] {
        fwsvm()
            .args(["bench", "kernels", "--backend", "cpu", flag, "0"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(flag).and(predicate::str::contains(says)));
    }

    // fwsvm check: CPU and GPU agree within the documented tolerances ...
    let out = fwsvm()
        .args(["check", "-a", "partan", "--checkpoints", "0,5,20", "--test"])
        .arg(&train)
        .arg(&train)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    for want in [
        "| iterations |",
        "| certified gap (max over pairs) |",
        "| objective |",
        "| SVs |",
        "| 20 |",
        "training labels: ",
        "test labels: ",
        "check: passed",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // ... and a tolerance nothing can meet fails with exit code 1, naming it.
    fwsvm()
        .args(["check", "-q", "--checkpoints", "3", "--grad-tol", "1e-300"])
        .arg(&train)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("check failed").and(predicate::str::contains("--grad-tol")),
        );
}
