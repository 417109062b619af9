//! `benches/gpu-device.sh --quick`: the prepared GPU-machine measurement, end to end at small
//! sizes on whatever adapter this machine has (lavapipe in CI), so that the script is known to
//! work before device time is spent on it.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

fn main() -> std::process::ExitCode {
    let adapter = fwsvm::backend::gpu::GpuContext::open(&fwsvm::backend::gpu::DeviceSelector::Any)
        .expect("opening an adapter")
        .is_some();
    let python = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = match (adapter, python) {
        (true, true) => None,
        (false, _) => Some("benches/gpu-device.sh --quick: no GPU adapter".to_string()),
        (true, false) => Some("benches/gpu-device.sh --quick: no python3".to_string()),
    };
    common::run_tests(trials![gpu_device_script_runs_end_to_end_quick], missing)
}

/// About two minutes on lavapipe.
fn gpu_device_script_runs_end_to_end_quick() {
    let root = common::repo_root();
    let out = common::tempdir();
    let work = common::tempdir();
    let st = Command::new("bash")
        .arg(root.join("benches/gpu-device.sh"))
        .args(["--quick", "--budget", "400"])
        .env("OUT", out.path())
        .env("GPU_DEVICE_WORK", work.path())
        .env("FWSVM", env!("CARGO_BIN_EXE_fwsvm"))
        .status()
        .expect("running bash");
    assert!(st.success(), "benches/gpu-device.sh --quick failed: {st}");
    let table = std::fs::read_to_string(out.path().join("table.md")).expect("table.md");
    let json = std::fs::read_to_string(out.path().join("results.json")).expect("results.json");
    // Both backends measured and trained a9a (shipped in data/) to convergence, labels compared.
    for row in ["| dense | 20000 | 38 |", "| csr | 20000 | 123 |"] {
        assert_eq!(
            table.matches(row).count(),
            2,
            "kernels row {row} per backend:\n{table}"
        );
    }
    for backend in ["gpu", "cpu"] {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| a9a | ws | {backend} |")))
            .unwrap_or_else(|| panic!("no a9a ws {backend} row:\n{table}"));
        assert!(row.contains("| converged |"), "{row}");
        assert!(row.contains(" % | "), "no label agreement in {row}");
        let calls = if backend == "gpu" {
            "device_loop "
        } else {
            "block "
        };
        assert!(row.contains(calls), "no call times in {row}");
    }
    // The GPU's host-driven loop beside its device loop; covtype on both backends.
    let host = table
        .lines()
        .find(|l| l.starts_with("| a9a | ws (host loop) | gpu |"))
        .unwrap_or_else(|| panic!("no a9a host-loop row:\n{table}"));
    assert!(
        host.contains("| converged |") && host.contains("block "),
        "{host}"
    );
    let covtype = root.join("../shared/datasets/covtype.libsvm.binary.xz");
    if !covtype.exists() {
        eprintln!(
            "gpu-device --quick: {} not found, covtype's rows not checked",
            covtype.display()
        );
    }
    for backend in ["gpu", "cpu"].into_iter().filter(|_| covtype.exists()) {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("| covtype | ws | {backend} |"))),
            "no covtype {backend} row:\n{table}"
        );
    }
    assert!(json.contains("\"training\""), "{json}");
    assert!(!table.contains("rc 1,"), "a step failed:\n{table}");
}
