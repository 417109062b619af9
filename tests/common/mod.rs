//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod problems;

/// `data/<name>` (shipped in the repository: heart_scale, a9a, a9a.t), else the folder named by
/// `FWSVM_DATASETS` (default: the workspace's shared datasets folder beside the clone, where
/// the larger sets are), or None (with a loud message) when neither has it outside CI. In CI (`CI=true`) a missing dataset is a failure,
/// never a skip.
pub fn dataset(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shipped = root.join("data").join(name);
    if shipped.exists() {
        return Some(shipped);
    }
    let folder = std::env::var_os("FWSVM_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/datasets"));
    let p = folder.join(name);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("dataset {} is missing in CI", p.display());
    }
    skip(&format!("dataset {} not found", p.display()));
    None
}

/// Reports a skipped check where the test summary shows it: written to the process's stderr
/// directly, which the test harness does not capture (its capture covers only `eprintln!`), so
/// `cargo test` prints it even for a test that passes.
pub fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

/// A scratch directory removed at the end of the test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// The dataset without its first feature (breast-cancer's sample id), the others shifted down.
pub fn drop_first_feature(ds: &fwsvm::data::Dataset) -> fwsvm::data::Dataset {
    let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
    let mut row = vec![0f64; ds.n_features()];
    for i in 0..ds.len() {
        row.iter_mut().for_each(|v| *v = 0.0);
        ds.row(i).scatter_f64(&mut row);
        for (j, &x) in row.iter().enumerate().skip(1) {
            if x != 0.0 {
                ix.push(j as u32 - 1);
                vs.push(x as f32);
            }
        }
        ip.push(ix.len());
    }
    fwsvm::data::Dataset::from_csr(ds.n_features() - 1, ip, ix, vs, ds.labels.clone())
}
