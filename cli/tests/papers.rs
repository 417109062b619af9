//! `benches/papers/suite.py --quick`: the papers' reproduction suite, end to end on its small
//! cases (ijcnn1 from ../shared/datasets, heart_scale from data/, LIBSVM from the .venv that
//! `bash .ci/run` installs), so that the documented command is known to work.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

fn main() -> std::process::ExitCode {
    let root = common::repo_root();
    let ready = root.join(".venv/bin/python").exists()
        && root.join("../shared/datasets/ijcnn1.trn.bz2").exists();
    let missing = (!ready).then(|| {
        "benches/papers/suite.py --quick: needs .venv (bash .ci/run) and ijcnn1.trn.bz2 in the \
         shared datasets folder"
            .to_string()
    });
    common::run_tests(trials![papers_suite_runs_quick], missing)
}

fn papers_suite_runs_quick() {
    let root = common::repo_root();
    let python = root.join(".venv/bin/python");
    let out = common::tempdir();
    let run = Command::new(&python)
        .arg(root.join("benches/papers/suite.py"))
        .arg("--quick")
        .arg("--out")
        .arg(out.path())
        .env("FWSVM", env!("CARGO_BIN_EXE_fwsvm"))
        .output()
        .expect("running python");
    let log =
        String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "suite.py --quick failed:\n{log}");
    let md = std::fs::read_to_string(out.path().join("results.md")).expect("results.md");
    // The four FW variants and SWAP-2o and the CVM converged on ijcnn1 at ε = 1e-3 …
    for alg in ["fw", "mfw", "swap", "partan"] {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| ijcnn1 | {alg} |")))
            .unwrap_or_else(|| panic!("no ijcnn1 {alg} row:\n{md}"));
        assert!(row.ends_with("| converged |"), "{row}");
    }
    // … and SimpleSVM matched LIBSVM on every training label of heart_scale at each C.
    let simple: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| heart_scale |"))
        .collect();
    assert_eq!(simple.len(), 3, "{md}");
    for row in simple {
        assert!(
            row.ends_with("| 100.00 |"),
            "labels differ from LIBSVM's: {row}"
        );
    }
    // The SWAP paper's Friedman test is reported (one set: its ranks, no test).
    assert!(md.contains("### Friedman test over the 1 sets"), "{md}");
    let json = std::fs::read_to_string(out.path().join("results.json")).expect("results.json");
    assert!(json.contains("\"iterations\""), "{json}");
}
