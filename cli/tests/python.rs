//! The Python package's pytest suite (`python/tests`), run from `cargo test` so the README's
//! one test command covers it. It needs a Python with the package installed from this checkout
//! (`pip install ./python`, which `.ci/run` does) plus pytest and scikit-learn: $FWSVM_PYTHON,
//! else ./.venv/bin/python. Without them the test is reported ignored (the reason printed); in CI
//! (`CI=true`) it fails.
//! The package is whatever was installed last: after changing the Rust code, reinstall it.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

fn python() -> Option<PathBuf> {
    let root = common::repo_root();
    let candidates = [
        std::env::var_os("FWSVM_PYTHON").map(PathBuf::from),
        Some(root.join(".venv/bin/python")),
    ];
    candidates.into_iter().flatten().find(|py| {
        std::process::Command::new(py)
            .args(["-c", "import fwsvm._native, pytest, sklearn"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn main() -> std::process::ExitCode {
    let missing = python().is_none().then(|| {
        "Python package tests: no python with fwsvm (pip install ./python), pytest and \
         scikit-learn (set FWSVM_PYTHON)"
            .to_string()
    });
    common::run_tests(trials![python_package_tests], missing)
}

fn python_package_tests() {
    let py = python().expect("checked by main");
    let root = common::repo_root();
    let out = std::process::Command::new(py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "python/tests",
        ])
        .current_dir(&root)
        .env("FWSVM_BIN", env!("CARGO_BIN_EXE_fwsvm"))
        .output()
        .expect("run pytest");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed:\n{text}");
}
